"""The judge's own verdict on a plan, for the strong offload planner (strong.py): a
bundled copy of judge.types.offload (packed beside it, one and two folders up in the
repository) gives the exact makespan."""


class Judge:
    """The judge's timing of a plan dict (and the plan parsed), or Nones when it breaks a rule."""

    def __init__(self, case):
        from judge.types.offload.case import _KEYS, _OPTIONAL, parse_case

        body = {k: v for k, v in case.items() if k in _KEYS | _OPTIONAL}  # not the limits
        self.case = parse_case(body, "case.json", int(case["capacity"]))

    def timing(self, raw):
        from judge.errors import InputError
        from judge.types.offload.plan import parse_plan
        from judge.types.offload.rules import check, coverage
        from judge.types.offload.simulate import simulate

        try:
            plan = parse_plan(raw, "plan.json", self.case)
        except InputError:
            return None, None
        if coverage(self.case, plan):
            return None, None
        message, layout = check(self.case, plan)
        if message or layout is None:
            return None, None
        return simulate(self.case, plan, layout), plan

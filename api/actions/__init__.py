"""Contest actions: what organizers and teams do, and how it is stored. Contests and
their settings (contests, contest_admin), the organizers' actions (admin) and the audit
log they land in (audit), problems and their package imports (problems, imports), the
reference planners judged as baselines and the shipped problems (baselines, shipped),
submissions, the final judging (finals) and clarifications (messages). The API, the
pages and the workers all call these; the workers use finals, imports, problems and
submissions, never the web layers above."""

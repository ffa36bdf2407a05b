"""Problem types are plugins behind one small interface (see `base.ProblemType`).

Built-in types register here; a third-party type registers itself through the
`memorace.problem_types` entry point group, so adding one touches nothing else.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from judge.types.base import CaseLike, PlanLike, ProblemType, Verification

_REGISTRY: dict[str, ProblemType] = {}


def register(ptype: ProblemType) -> ProblemType:
    _REGISTRY[ptype.name] = ptype
    return ptype


def get_type(name: str) -> ProblemType:
    """The problem type called `name`; KeyError with the known names otherwise."""
    _load_builtin()
    if name not in _REGISTRY:
        for ep in entry_points(group="memorace.problem_types"):
            if ep.name == name:
                register(ep.load())
    if name not in _REGISTRY:
        raise KeyError(f"unknown problem type '{name}' (known: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name]


def known_types() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def _load_builtin() -> None:
    if not _REGISTRY:
        from judge.types.offload import OFFLOAD
        from judge.types.offset import OFFSET
        from judge.types.online import ONLINE

        register(OFFSET)
        register(OFFLOAD)
        register(ONLINE)


__all__ = ["CaseLike", "PlanLike", "ProblemType", "Verification", "get_type", "known_types"]

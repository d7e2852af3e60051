"""Which setup a run is, and which of a benchmark's options apply to it: the rules a run and the app's builder share.

A run of an agent, a capability or a control is the `yours` setup. No agent ·
Original is `original` when its model is one of the Original's declared
models (or it declares none), else `model` (the upstream told `runs_as`
while the relay sends the model chosen).

An option applies to a run when its `setups` hold the run's setup (an option
without `setups` is `yours` alone) and, for each option its `when` names,
that option applies and holds one of the values listed. Its `datasets` are
checked apart, where the run's dataset is known.
"""

from __future__ import annotations

from nullius_core.definitions.benchmark import Standard
from nullius_core.definitions.common import Option

YOURS = "yours"  # the setup of a run of an agent, a capability or a control
SETUPS = ("original", "model", YOURS)


def original_method(standard: Standard, model: str | None) -> str | None:
    """The setup No agent · Original runs as with `model`: `original`, `model`, or None when neither can run it."""
    setups = standard.setups or {}
    original, substitute = setups.get("original"), setups.get("model")
    if original is not None and (not original.models or not model or model in original.models):
        return "original"
    if substitute is not None and substitute.runs_as:
        return "model"
    return None


def setups_of(option: Option) -> list[str]:
    return list(option.setups) if option.setups is not None else [YOURS]


def why_not(name: str, option: Option, values: dict[str, str], setup: str, ref: str) -> str | None:
    """Why option `name` does not apply (given the values of the options that do), or None when it does."""
    if setup not in setups_of(option):
        return f"option {name!r} of {ref} is a setting of the {', '.join(setups_of(option))} setup(s), not of this run's ({setup})"
    for other, allowed in (option.when or {}).items():
        if values.get(other) not in allowed:
            now = values.get(other)
            said = f"it is {now!r}" if now is not None else "it does not apply"
            return f"option {name!r} of {ref} applies only when {other} is {' or '.join(allowed)} ({said})"
    return None


def applying(declared: dict[str, Option], values: dict[str, str], setup: str, ref: str) -> tuple[dict[str, str], dict[str, str]]:
    """The values of the options that apply, and why each of the others does not (an option's `when` may name one that does not)."""
    held = dict(values)
    why: dict[str, str] = {}
    changed = True
    while changed:  # an option whose `when` names one that was just dropped is dropped in turn
        changed = False
        for name in list(held):
            reason = why_not(name, declared[name], held, setup, ref)
            if reason is not None:
                why[name] = reason
                del held[name]
                changed = True
    return held, why

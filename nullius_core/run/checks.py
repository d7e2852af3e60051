"""Checks a run makes of what it is asked, shared by the benchmark's and the participant's preparation (prepare.py, participant.py).

Each refuses with `RunRefused` (or the caller's refusal), saying what to fix;
none installs, clones or downloads anything.
"""

from __future__ import annotations

from nullius_core.catalogue.catalogue import Entry
from nullius_core.contracts.refused import RunRefused
from nullius_core.definitions import Option
from nullius_core.definitions.folder import folder_problems
from nullius_core.plugins.registries import BackendSpec


def refuse_folder(entry: Entry, what: str, refused: type[Exception] = RunRefused) -> None:
    """A definition whose folder `nullius check` refuses (a path or link leaving it) runs nothing."""
    problems = folder_problems(entry.file)
    if problems:
        raise refused(f"{what}:\n" + "\n".join(p.render() for p in problems))


def resolve_options(declared: dict[str, Option], given: dict[str, str], dataset: str, ref: str, what: str = "option") -> dict[str, str]:
    """Every option's value (defaults included), refusing an unknown name or a value not allowed."""
    for name, value in given.items():
        option = declared.get(name)
        if option is None:
            known = ", ".join(sorted(declared)) or "none"
            raise RunRefused(f"{ref} has no {what} {name!r} ({what}s: {known})")
        if option.datasets and dataset not in option.datasets:
            raise RunRefused(f"{what} {name!r} of {ref} applies to datasets {', '.join(option.datasets)}, not {dataset!r}")
        if not option.allows(value):
            allowed = ", ".join(option.values) if option.values is not None else f"values matching {option.pattern!r}"
            raise RunRefused(f"{what} {name!r} of {ref} does not allow {value!r} (allowed: {allowed})")
    out: dict[str, str] = {}
    for name, option in declared.items():
        if option.datasets and dataset not in option.datasets:
            continue
        value = given.get(name, option.default)
        if value is not None:
            out[name] = value
    return out


def check_backend(backend: BackendSpec) -> None:
    """The backend's own cheap check (docker's daemon answers, bwrap's namespaces): refused as its `start` would be, before any install."""
    if backend.check is None:
        return
    try:
        why = backend.check()
    except Exception as exc:  # noqa: BLE001 - a check that raises says why in its exception
        why = f"{type(exc).__name__}: {exc}"
    if why:
        raise RunRefused(f"the backend {backend.name!r} cannot start: {why}")

"""A variant's task scope over a run's units, and a resumed job's variant held to the one it ran.

A scoped variant (variant.toml `tasks`) runs only its units: the others are
left out before the shard and --limit, and recorded as out of scope (skipped,
never errors). None in scope refuses the run (`NoneInScope`); --all-variants
reports that variant as skipped and goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nullius_core.contracts.refused import RunRefused
from nullius_core.jobs.standard import JobStandard
from nullius_core.variants import Variant


class NoneInScope(RunRefused):
    """A scoped variant none of whose tasks is among the run's units."""


def split(variant: Variant | None, units: list[str], bench: str) -> tuple[list[str], list[str]]:
    """The units in the variant's scope, in the driver's order, and those left out."""
    if variant is None or not variant.scoped:
        return units, []
    wanted = set(variant.toml.tasks)
    inside = [u for u in units if u in wanted]
    if not inside:
        shown = ", ".join(variant.toml.tasks[:5]) + (", ..." if len(variant.toml.tasks) > 5 else "")
        raise NoneInScope(f"the variant {variant.name} is scoped to tasks {shown} ({variant.file}: $.tasks), "
                          f"none of which is a unit of {bench} ({len(units)} units, e.g. {', '.join(units[:3])})")
    return inside, [u for u in units if u not in wanted]


def same_variant(job_dir: Path, std: JobStandard, prepared: Any) -> None:
    """A resumed job runs the variant it ran: a changed one is another configuration, refused."""
    staged = getattr(prepared.agent, "staged", None)
    digest = staged.digest if staged is not None else None
    had = std.variant.digest if std.variant is not None else None
    if digest != had:
        raise RunRefused(f"{job_dir} ran variant digest {had}, its variant folder now gives {digest}: a changed variant is another "
                         "configuration; run it as a new job")

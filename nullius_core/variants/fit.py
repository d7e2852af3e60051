"""Does a variant (and an effort) fit its agent: every file it holds has a place the agent declares, and the effort a way in.

Nothing is dropped: an instruction file the agent does not read, skills of an
agent that declares no skills folder, an effort for an agent with no way to
take one: each refuses the run before any unit, naming what is missing.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from nullius_core.definitions.agent import Resolved
from nullius_core.definitions.variant_places import VariantPlaces
from nullius_core.variants.folder import Variant
from nullius_core.variants.stage import StagedVariant, stage

_NO_PLACES = VariantPlaces()  # a variant of variant.toml alone needs no place


@attrs.frozen(kw_only=True)
class Fitted:
    """What the variant and the effort do to the agent's run: options set, environment added, files staged."""

    options: dict[str, str]  # the agent options the effort sets (an effort declared as an option)
    env: dict[str, str]  # the variables the effort sets (an effort declared as env)
    staged: StagedVariant | None


def missing(variant: Variant, resolved: Resolved) -> list[str]:
    """What the variant holds that its agent declares no place for, each said with the field of agent.json that would give one."""
    places = resolved.variant
    reasons = []
    instructions = places.instructions if places is not None else None
    for name in variant.instructions:
        if instructions is None:
            reasons.append(f"it holds {name}, but {resolved.ref} declares no instruction file (agent.json variant.instructions)")
        elif name != instructions.file:
            reasons.append(f"it holds {name}, but {resolved.ref} reads {instructions.file} (agent.json variant.instructions.file)")
    has_skills = bool(variant.skills or variant.toml.skill)
    if has_skills and (places is None or places.skills is None):
        reasons.append(f"it holds skills, but {resolved.ref} declares no skills folder (agent.json variant.skills)")
    return reasons


def fit(variant: Variant | None, effort: str | None, resolved: Resolved, given_options: dict[str, str], scratch: Path,
        refused: type[Exception]) -> Fitted:
    """The variant staged for `resolved` and the effort's way in; `refused` (the run's refusal) says what does not fit."""
    staged = None
    if variant is not None:
        reasons = missing(variant, resolved)
        if reasons:
            raise refused(f"the variant {variant.name} ({variant.folder}) cannot run on {resolved.ref}: " + "; ".join(reasons))
        assert resolved.variant is not None or not (variant.instructions or variant.skills or variant.toml.skill)
        staged = stage(variant, resolved.variant or _NO_PLACES, scratch)
    options: dict[str, str] = {}
    env: dict[str, str] = {}
    if effort:
        way = resolved.variant.effort if resolved.variant is not None else None
        if way is None:
            raise refused(f"reasoning effort {effort!r} cannot reach {resolved.ref}: it declares no way to take one "
                          "(agent.json variant.effort: an option or an env variable)")
        if way.option is not None:
            if given_options.get(way.option, effort) != effort:
                raise refused(f"--option {way.option}={given_options[way.option]} and the reasoning effort {effort!r} disagree: give one")
            options[way.option] = effort
        else:
            assert way.env is not None
            env[way.env] = effort
    return Fitted(options=options, env=env, staged=staged)

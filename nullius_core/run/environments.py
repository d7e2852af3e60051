"""A unit's environment: the one its setup names (else its dataset's), and what it needs.

The benchmark's `environments` declare them; `setup` may reply
`"environment": NAME`, a dataset may name a default, none is the base. An
undeclared name is the unit's setup error. The backend makes the image
(`Backend.use_environment`); the local backend runs only the base and
refuses an agent's unit in an environment unless it is `local_ok`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from nullius_core.definitions.benchmark import Environment
from nullius_core.licences import SecretStore
from nullius_core.licences.handout import Handout, hand_out


class EnvironmentProblem(Exception):
    """The unit cannot have its environment: its setup error, of the trial's exception type `kind`."""

    def __init__(self, message: str, kind: str = "EnvironmentSetupError", environment: UnitEnvironment | None = None):
        super().__init__(message)
        self.kind = kind
        self.environment = environment  # the one the unit would have run in: its trial records it


@attrs.frozen(kw_only=True)
class UnitEnvironment:
    name: str
    definition: Environment
    benchmark: str  # the benchmark's key: its images are nullius/env-<benchmark>-<name>:<hash>
    folder: Path  # the benchmark's folder: the Dockerfile and its files are read from here
    log: Path  # the job's .work/env-<name>.log: the build's output


def unit_environment(prepared: Any, setup: dict[str, Any], job_dir: Path) -> UnitEnvironment | None:
    name = setup.get("environment", prepared.dataset.environment)
    if name is None:
        return None
    declared = prepared.bench.environments or {}
    if not isinstance(name, str) or name not in declared:
        known = ", ".join(sorted(declared)) or "none"
        raise EnvironmentProblem(f"setup names the environment {name!r}, which standard.json does not declare (declared: {known})")
    return UnitEnvironment(
        name=name,
        definition=declared[name],
        benchmark=prepared.entry.key,
        folder=Path(prepared.entry.folder),
        log=job_dir / ".work" / f"env-{name}.log",
    )


async def enter(facts: Any, backend: Any, place: Any, setup: dict[str, Any], trial_name: str) -> tuple[Any, Handout | None]:
    """The unit's place in its environment, and its agent's licences (remove them when the agent ends).

    Raises EnvironmentProblem with the trial's exception type: a secret not
    set is `EnvironmentSecretMissingError` ("not run: needs NAME"), for a
    control too; anything else `EnvironmentSetupError`.
    """
    prepared = facts.prepared
    try:
        environment = unit_environment(prepared, setup, facts.job.path)
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(str(exc), "EnvironmentSetupError") from None
    handout = None
    needs = list(environment.definition.needs_secrets or []) if environment else []
    if needs:
        store = SecretStore(facts.secrets_dir, prepared.entry.key)
        missing = store.missing([s.name for s in needs])
        if missing:
            raise EnvironmentProblem("not run: needs " + ", ".join(missing), "EnvironmentSecretMissingError", environment)
        if prepared.agent is not None and prepared.agent.resolved.family != "capability":
            handout = hand_out(store, [s for s in needs if s.to == "agent"], trial_name, facts.job_id)
    participant = "control" if prepared.agent is None else prepared.agent.resolved.family
    try:
        place = await backend.use_environment(place, environment, participant, handout)
    except Exception as exc:  # noqa: BLE001 - an image that cannot be built is this unit's setup error
        if handout is not None:
            handout.remove()
        message = str(exc) if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {exc}"
        raise EnvironmentProblem(message, "EnvironmentSetupError", environment) from None
    return place, handout

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
from nullius_core.run.own_image import OwnImageProblem, OwnUnit, read_own


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
    own: OwnUnit | None = None  # an own image's: what setup asked for (image, workdir, verify)


def unit_environment(prepared: Any, setup: dict[str, Any], job_dir: Path) -> UnitEnvironment | None:
    name = setup.get("environment", prepared.dataset.environment)
    declared = prepared.bench.environments or {}
    own_fields = sorted(k for k in ("image", "workdir", "verify") if setup.get(k) is not None)
    if own_fields and not (isinstance(name, str) and name in declared and declared[name].image == "own"):
        # never run a task that asked for its own image on the base instead
        raise EnvironmentProblem(f"setup replies {', '.join(own_fields)}, which only an environment declared \"image\": \"own\" reads; "
                                 f"it names {name!r}")
    if name is None:
        return None
    if not isinstance(name, str) or name not in declared:
        known = ", ".join(sorted(declared)) or "none"
        raise EnvironmentProblem(f"setup names the environment {name!r}, which standard.json does not declare (declared: {known})")
    definition = declared[name]
    own = None
    if definition.image == "own":
        source = Path(prepared.upstream_dir or prepared.entry.folder)  # build and copy name folders of the upstream
        try:
            own = read_own(setup, source, prepared.entry.key)
        except OwnImageProblem as exc:
            raise EnvironmentProblem(str(exc)) from None
    return UnitEnvironment(
        name=name,
        definition=definition,
        benchmark=prepared.entry.key,
        folder=Path(prepared.entry.folder),
        log=job_dir / ".work" / f"env-{name}.log",
        own=own,
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
        if environment is not None and environment.own is not None:
            host = await _box_host(facts, backend, participant)
            place = await host.use_environment(place, environment, participant, handout)
            place = attrs.evolve(place, box=await host.open_box(place, environment.own, trial_name))
        else:
            place = await backend.use_environment(place, environment, participant, handout)
    except Exception as exc:  # noqa: BLE001 - an image that cannot be built is this unit's setup error
        if handout is not None:
            handout.remove()
        message = str(exc) if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {exc}"
        raise EnvironmentProblem(message, "EnvironmentSetupError", environment) from None
    return place, handout


async def _box_host(facts: Any, backend: Any, participant: str) -> Any:
    """The backend that runs this unit's own image: the run's, or for a control one lent by the run (it needs docker only)."""
    if hasattr(backend, "open_box"):
        return backend
    if participant != "control":
        raise ValueError(f"an agent's unit in its task's own image needs a backend that runs own images (--backend docker); "
                         f"the {backend.name} backend does not")
    if facts.boxes is None:
        raise ValueError("this unit's task has its own image, and no backend here runs own images")
    return await facts.boxes.lend()

"""A unit's environment: the one its setup names (else its dataset's), and what it needs.

The benchmark's `environments` declare them; `setup` may reply
`"environment": NAME`, a dataset may name a default, none is the base. An
undeclared name is the unit's setup error. The backend makes the image
(`Backend.use_environment`); the local backend runs only the base and
refuses an agent's unit in an environment unless it is `local_ok`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core.contracts.backend import Backend, RunContext, UnitPlace
from nullius_core.contracts.environment import UnitEnvironment
from nullius_core.contracts.own_image import BuildFailed, OwnImageProblem, read_own
from nullius_core.licences import SecretStore
from nullius_core.licences.handout import Handout, hand_out

if TYPE_CHECKING:
    from nullius_core.plugins import BackendSpec
    from nullius_core.run.unit import RunFacts


class EnvironmentProblem(Exception):
    """The unit cannot have its environment: its setup error, of the trial's exception type `kind`."""

    def __init__(self, message: str, kind: str = "EnvironmentSetupError", environment: UnitEnvironment | None = None):
        super().__init__(message)
        self.kind = kind
        self.environment = environment  # the one the unit would have run in: its trial records it



def unit_environment(prepared: Any, setup: dict[str, Any], job_dir: Path) -> UnitEnvironment | None:
    name = setup.get("environment", prepared.dataset.environment)
    declared = prepared.bench.environments or {}
    own_fields = sorted(k for k in ("image", "workdir", "verify", "env", "healthcheck", "artifacts", "dirs", "steps", "compose") if setup.get(k) is not None)
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
        source = prepared.source_dir  # build and copy name folders of the upstream (of the dataset, for a folder)
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


async def enter(facts: RunFacts, backend: Backend, place: UnitPlace, setup: dict[str, Any], trial_name: str) -> tuple[UnitPlace, Handout | None]:
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
        if isinstance(exc, BuildFailed):
            raise EnvironmentProblem(str(exc), "SandboxBuildFailedError", environment) from None
        message = str(exc) if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {exc}"
        raise EnvironmentProblem(message, "EnvironmentSetupError", environment) from None
    return place, handout


async def _box_host(facts: RunFacts, backend: Backend, participant: str) -> Any:
    """The backend that runs this unit's own image: the run's, or for a control one lent by the run (it needs docker only)."""
    if hasattr(backend, "open_box"):
        return backend
    if participant != "control":
        raise ValueError(f"an agent's unit in its task's own image needs a backend that runs own images (--backend docker); "
                         f"the {backend.name} backend does not")
    if facts.boxes is None:
        raise ValueError("this unit's task has its own image, and no backend here runs own images")
    return await facts.boxes.lend()


class BoxLender:
    """For a run on a backend without boxes: the first registered backend that has them, started when a control's unit first needs it.

    Controls of an own-image benchmark need docker, not the docker backend
    (the standard's "Controls" row): their task's image has to run somewhere.
    """

    def __init__(self, specs: Iterable[BackendSpec], context: RunContext):
        self._specs = specs
        self._context = context
        self._backend: Backend | None = None
        self._refused: str | None = None
        self._lock = asyncio.Lock()

    async def lend(self) -> Backend:
        async with self._lock:
            if self._backend is None and self._refused is None:
                spec = next((s for s in self._specs if s.boxes), None)
                if spec is None:
                    self._refused = ("this unit's task has its own image: it needs docker, and no installed backend runs own images "
                                     "(pip install nullius-backend-docker)")
                else:
                    try:
                        backend = spec.factory()
                        await backend.start(self._context)
                    except Exception as exc:  # noqa: BLE001 - said once, for every unit that needs it
                        self._refused = f"this unit's task has its own image, which needs the {spec.name} backend's docker: {exc}"
                    else:
                        self._backend = backend
            if self._refused is not None:
                raise ValueError(self._refused)
            return self._backend

    async def close(self) -> None:
        if self._backend is not None:
            await self._backend.close()

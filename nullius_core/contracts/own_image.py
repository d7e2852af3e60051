"""A unit in its task's own image: what setup asks for, and what a backend that runs own images offers.

A benchmark whose tasks are containers declares an environment `"image":
"own"`; each unit's setup then names its image (`build`: a folder of the
upstream holding a Dockerfile, or `pull`: a reference pinned by digest), its
`workdir` and its `verify`. The unit's box runs the image for the whole unit:
the agent is added to it, the oracle's `solve` runs in it, and after the
agent ends the check runs where the work is; `score` is sent what it found
(`verified`), so the driver never runs docker itself.

A backend runs own images when it has `open_box` (the docker plugin's). A
control's unit (nop, oracle) needs docker but not the docker backend: on a
backend without boxes, the run borrows a registered backend that has them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

import attrs

from nullius_core.definitions.converter import structure
from nullius_core.definitions.problems import DefinitionError

DIGEST = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
MAX_SECONDS = 6 * 3600


class OwnImageProblem(ValueError):
    """Setup's own-image fields are malformed: the unit's setup error, naming the field."""


@attrs.frozen(kw_only=True)
class ImageSpec:
    build: str | None = None
    pull: str | None = None
    memory_mb: int | None = None
    cpus: float | None = None


@attrs.frozen(kw_only=True)
class Steps:
    """Files put in after the agent ends, then a command run in the working directory (`solve`)."""

    copy: dict[str, str] = attrs.field(factory=dict)  # a folder of the upstream -> an absolute path inside
    write: dict[str, str] = attrs.field(factory=dict)  # an absolute path inside -> its text
    run: list[str] | None = None
    seconds: float = 600.0


@attrs.frozen(kw_only=True)
class Verify(Steps):
    collect: str | None = None  # a folder inside, copied into the trial's verifier/
    clear: list[str] = attrs.field(factory=list)  # absolute paths inside removed before the files go in: what the agent left there never counts
    network: bool = False  # the check's command gets the egress proxy
    allow: list[str] | None = None  # with network: only these hosts (a name, *.suffix, an address or a range); None: any global address
    keep_processes: bool = False  # what the agent left running stays up during the check


@attrs.frozen(kw_only=True)
class Healthcheck:
    """Run in the box after it starts, before the agent or the oracle: it must pass (exit 0) first, as Docker's HEALTHCHECK."""

    run: list[str]
    interval: float = 5.0  # between tries, after the start period
    timeout: float = 30.0  # one try's limit
    start_period: float = 0.0  # failures in it do not count
    start_interval: float = 5.0  # between tries in the start period
    retries: int = 3  # failures in a row that make it fail


@attrs.frozen(kw_only=True)
class Artifact:
    """A path inside copied out after the agent (or the oracle) ends, before the check: into the trial's artifacts/."""

    source: str  # absolute, inside the box
    destination: str  # relative to the trial's artifacts/
    exclude: list[str] = attrs.field(factory=list)  # tar patterns left out of a folder
    service: str | None = None  # one of the task's other services (compose), else the box


@attrs.frozen(kw_only=True)
class Step:
    """One step of a task of steps (run/steps.py): its prompt, what runs before it (not for the first), its check."""

    name: str
    prompt: str
    verify: Verify
    before: Steps | None = None
    artifacts: list[Artifact] = attrs.field(factory=list)  # copied out after the step's turn, into steps/<name>/artifacts/
    healthcheck: Healthcheck | None = None  # run after its `before`, before its turn (the task's own ran when the box started)


@attrs.frozen(kw_only=True)
class OwnUnit:
    """One unit's own image, as its setup asked for it; `source` is the folder `build` and `copy` are relative to."""

    image: ImageSpec
    workdir: str | None
    verify: Verify | None
    source: Path
    benchmark: str
    env: dict[str, str] = attrs.field(factory=dict)  # the box's own environment: every process in it (the agent's, the check's) has it
    healthcheck: Healthcheck | None = None
    artifacts: list[Artifact] = attrs.field(factory=list)
    dirs: list[str] = attrs.field(factory=list)  # absolute folders made (writable by all) as the box starts: Harbor's /logs/* mounts
    steps: list[Step] | None = None  # a task of steps (run/steps.py): each its own prompt and check, in place of `verify`
    compose: str | None = None  # a compose file of the upstream: the task's other services, its `main` being the box


@attrs.frozen(kw_only=True)
class Verified:
    """What the check found, as `score` is sent it."""

    exit: int | None
    timed_out: bool
    output: str  # the check's stdout and stderr (its end, when long), also verifier/test-stdout.txt
    dir: str  # the trial's verifier/ folder
    collected: list[str]  # files copied from `collect` into it, relative to it

    def request(self) -> dict[str, Any]:
        return attrs.asdict(self)


class Box(Protocol):
    """The unit's container, running its own image for the whole unit."""

    workdir: str  # the agent's cwd inside: setup's workdir, else the image's own

    async def solve(self, steps: Steps, out: Path) -> int | None:
        """The oracle's solution, run in the box; its output to `out`; its exit (None: timed out)."""

    async def put_files(self, folder: Path) -> None:
        """The files under `folder` into the working directory, over what is there (a variant's, before the agent starts)."""

    async def changes(self) -> str:
        """What the agent (or the oracle) changed in the container (`docker diff`), one path a line; taken once,
        before the check's files go in (`verify` takes it then)."""

    async def workdir_patch(self) -> str | None:
        """The agent's changes to the working directory as one git patch against its first commit (untracked files
        included, the repository itself untouched), taken once like `changes`; None where the working directory is
        no git repository or the image has no git. It is the trial's agent/changes.patch."""

    async def healthy(self, check: Healthcheck) -> None:
        """`check` run until it passes, by Docker's HEALTHCHECK rules; NotReady when it fails (a step's own healthcheck)."""

    async def collect_artifacts(self, artifacts: list[Artifact], folder: Path) -> list[dict[str, Any]]:
        """Each artifact copied into `folder` (the trial's artifacts/); one entry a path, as Harbor's manifest.json has them:
        {source, destination, type: file|directory, status: ok|failed|empty, service: None, exclude}."""

    async def verify(self, verify: Verify, verifier_dir: Path) -> Verified:
        """Stop the agent's processes (unless kept), put the check's files in, run it, collect its files.

        Raises VerifyProblem when a process of the agent cannot be stopped.
        """

    async def close(self) -> None:
        """End the box and what it started; give the agent's HOME back to this machine's user."""


class NotReady(Exception):
    """The box's healthcheck did not pass: the unit's HealthcheckError, saying what the last try said."""


class NotRun(ValueError):
    """The unit cannot run here, for a reason its message says whole ("not run: ..."): its setup error."""


class BuildFailed(Exception):
    """The task's own image could not be built (or pulled): the unit's SandboxBuildFailedError, Harbor's name for it."""


class VerifyProblem(Exception):
    """The check cannot be run as the standard asks (a process that cannot be stopped): a VerifierError."""


def _checked(value: Any, cls: type, where: str, whose: str = "setup's") -> Any:
    try:
        return structure(value, cls, where)
    except DefinitionError as exc:
        raise OwnImageProblem(f"{whose} " + "; ".join(p.render() for p in exc.problems)) from None


def _paths(steps: Steps, where: str, whose: str = "setup's") -> None:
    for source, inside in steps.copy.items():
        if Path(source).is_absolute() or ".." in Path(source).parts:
            raise OwnImageProblem(f"{whose} {where}.copy names {source!r}: expected a folder relative to the upstream")
        if not inside.startswith("/") and inside != ".":
            raise OwnImageProblem(f"{whose} {where}.copy puts {source!r} at {inside!r}: expected an absolute path inside (or '.', the working directory)")
    for inside in steps.write:
        if not inside.startswith("/") or inside.endswith("/"):
            raise OwnImageProblem(f"{whose} {where}.write names {inside!r}: expected an absolute file path inside")
    if steps.run is not None and not steps.run:
        raise OwnImageProblem(f"{whose} {where}.run is empty: expected a command, as a list of strings")
    if not 0 < steps.seconds <= MAX_SECONDS:
        raise OwnImageProblem(f"{whose} {where}.seconds is {steps.seconds:g}: expected more than 0, at most {MAX_SECONDS}")


def read_own(setup: dict[str, Any], source: Path, benchmark: str) -> OwnUnit:
    """The own-image fields of a unit's setup reply; OwnImageProblem names the field that is wrong."""
    image = _checked(setup.get("image"), ImageSpec, "image") if isinstance(setup.get("image"), dict) else None
    if image is None:
        raise OwnImageProblem("setup names an own-image environment but no image: expected image {build: folder} or {pull: name@sha256:...}")
    if (image.build is None) == (image.pull is None):
        raise OwnImageProblem("setup's image: expected exactly one of build (a folder of the upstream) and pull (name@sha256:...)")
    if image.pull is not None and not DIGEST.match(image.pull):
        raise OwnImageProblem(f"setup's image.pull is {image.pull!r}: expected a reference pinned by its digest, name@sha256:<64 hex>")
    if image.build is not None:
        folder = (source / image.build).resolve()
        if not folder.is_relative_to(source.resolve()):
            raise OwnImageProblem(f"setup's image.build names {image.build!r}, outside the upstream")
        if not (folder / "Dockerfile").is_file():
            raise OwnImageProblem(f"setup's image.build names {image.build!r}: expected a folder of the upstream holding a Dockerfile ({folder})")
    if image.memory_mb is not None and image.memory_mb < 16:
        raise OwnImageProblem(f"setup's image.memory_mb is {image.memory_mb}: expected at least 16")
    if image.cpus is not None and image.cpus <= 0:
        raise OwnImageProblem(f"setup's image.cpus is {image.cpus}: expected more than 0")
    workdir = setup.get("workdir")
    if workdir is not None and (not isinstance(workdir, str) or not workdir.startswith("/")):
        raise OwnImageProblem(f"setup's workdir is {workdir!r}: expected an absolute path inside the image")
    extra = _extras(setup)
    verify = _checked(setup["verify"], Verify, "verify") if setup.get("verify") is not None else None
    if verify is not None:
        _paths(verify, "verify")
        if verify.collect is not None and not verify.collect.startswith("/"):
            raise OwnImageProblem(f"setup's verify.collect is {verify.collect!r}: expected an absolute folder inside")
        for path in verify.clear:
            if not path.startswith("/") or path.rstrip("/") == "" or ".." in Path(path).parts:
                raise OwnImageProblem(f"setup's verify.clear names {path!r}: expected an absolute path inside, not / itself")
    return OwnUnit(image=image, workdir=workdir, verify=verify, source=source, benchmark=benchmark, steps=read_steps(setup), **extra)


def _extras(setup: dict[str, Any]) -> dict[str, Any]:
    """`env`, `healthcheck` and `artifacts`, checked."""
    env = _checked(setup.get("env") or {}, dict[str, str], "env")
    for name in env:
        if not name or "=" in name or not name.replace("_", "").isalnum():
            raise OwnImageProblem(f"setup's env names {name!r}: expected a variable's name (letters, digits, _)")
    check = _checked(setup["healthcheck"], Healthcheck, "healthcheck") if setup.get("healthcheck") is not None else None
    if check is not None and (not check.run or check.retries < 1 or min(check.interval, check.timeout, check.start_interval) <= 0):
        raise OwnImageProblem("setup's healthcheck: expected a command, retries of 1 or more, and intervals and a timeout above 0")
    artifacts = _checked(setup.get("artifacts") or [], list[Artifact], "artifacts")
    for i, artifact in enumerate(artifacts):
        if not artifact.source.startswith("/") or ".." in Path(artifact.source).parts:
            raise OwnImageProblem(f"setup's artifacts[{i}].source is {artifact.source!r}: expected an absolute path inside, without '..'")
        dest = Path(artifact.destination)
        if dest.is_absolute() or ".." in dest.parts or artifact.destination.strip("/") in ("", ".", "manifest.json"):
            raise OwnImageProblem(f"setup's artifacts[{i}].destination is {artifact.destination!r}: expected a relative path, not manifest.json")
    dirs = _checked(setup.get("dirs") or [], list[str], "dirs")
    for path in dirs:
        if not path.startswith("/") or ".." in Path(path).parts or path.rstrip("/") == "":
            raise OwnImageProblem(f"setup's dirs names {path!r}: expected an absolute folder inside, not / itself")
    compose = setup.get("compose")
    if compose is not None:
        if not isinstance(compose, str) or Path(compose).is_absolute() or ".." in Path(compose).parts:
            raise OwnImageProblem(f"setup's compose is {compose!r}: expected a compose file's path relative to the upstream")
    return {"env": env, "healthcheck": check, "artifacts": artifacts, "dirs": dirs, "compose": compose}


def read_solve(reply: dict[str, Any]) -> Steps | None:
    """The oracle's `solve`, when it replied one."""
    if reply.get("solve") is None:
        return None
    if isinstance(reply["solve"], list):
        raise OwnImageProblem("the oracle's solve is a list (one per step), but the task has no steps")
    steps = _checked(reply["solve"], Steps, "solve", "the oracle's")
    _paths(steps, "solve", "the oracle's")
    return steps


def read_step_solves(reply: dict[str, Any], n: int) -> list[Steps | None]:
    """A task of steps: the oracle's solve of each step (a list; None for a step without one)."""
    raw = reply.get("solve")
    if raw is None:
        return [None] * n
    solves = _checked(raw, list[Steps | None], "solve", "the oracle's")
    if len(solves) != n:
        raise OwnImageProblem(f"the oracle's solve has {len(solves)} entries: expected one per step ({n})")
    for i, steps in enumerate(solves):
        if steps is not None:
            _paths(steps, f"solve[{i}]", "the oracle's")
    return solves


def read_steps(setup: dict[str, Any]) -> list[Step] | None:
    """The setup reply's steps, checked; None for a task of one step."""
    if setup.get("steps") is None:
        return None
    if setup.get("verify") is not None:
        raise OwnImageProblem("setup replies both steps and verify: a task of steps has a check per step")
    steps = _checked(setup["steps"], list[Step], "steps")
    names = [s.name for s in steps]
    if not steps or len(set(names)) != len(names) or not all(n and "/" not in n and n not in (".", "..") for n in names):
        raise OwnImageProblem(f"setup's steps: expected at least one, with unique plain names; found {names}")
    for i, step in enumerate(steps):
        _paths(step.verify, f"steps[{i}].verify")
        if step.before is not None:
            _paths(step.before, f"steps[{i}].before")
    return steps

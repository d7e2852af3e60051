"""A task in its own image made of steps (Harbor's multi-step tasks): each step's prompt, agent turn (or oracle's solve) and check, in turn.

The setup reply's `steps` replace its `verify`: each `{name, prompt,
before, verify}`. Step 1's prompt is setup's; before each later step its
`before` runs in the box (files put in, a command run: Harbor's step
workdir and setup.sh), then the agent gets the step's prompt in a new
session (Harbor runs the agent again for each step). After each step's turn
its check runs where the work is, into the trial's `steps/<name>/verifier/`,
and the driver's `step` op says what it scored and whether the task goes on
(`continue`: Harbor's min_reward gates). `score` is then sent every step's
`{name, verified, reply}` as `steps` and gives the trial's reward (Harbor's
multi-step reward strategy is the driver's).

An oracle replies one `solve` per step (a list, None for a step without).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from nullius_core.contracts.driver import OP_SECONDS, Driver, DriverError
from nullius_core.contracts.own_image import NotReady, Step, Steps, VerifyProblem
from nullius_core.fsutil import write_json_atomic
from nullius_core.jobs.layout import TrialDir
from nullius_core.jobs.records import ExceptionInfo, StepResult, Timing, VerifierResult, iso, utcnow


class StepFailed(Exception):
    """A step could not be run as asked (its `before` failed or timed out, its check could not run): the unit's error of `kind`."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


class StepRun:
    """The steps of one unit: which is current, and what each check found and the driver said of it."""

    def __init__(self, steps: list[Step], box: Any, driver: Driver, base: dict[str, Any], trial: TrialDir):
        self.steps, self.box, self._driver, self._base, self._trial = steps, box, driver, base, trial
        self.current = 0
        self.results: list[dict[str, Any]] = []
        self.turn_started: datetime | None = None  # the current step's turn (step 1's: the trial's agent_execution, set by the unit)
        self.timings: list[tuple[Timing | None, Timing]] = []  # each checked step's turn and check

    def folder(self, index: int) -> Path:
        return self._trial.path / "steps" / self.steps[index].name

    async def begin(self, index: int) -> None:
        """Step `index`'s `before`, in the box; it becomes the current step."""
        self.current = index
        before = self.steps[index].before
        if before is None:
            await self._ready(index)
            self.turn_started = utcnow()
            return
        out = self.folder(index) / "setup-stdout.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        code = await self.box.solve(before, out)
        if code != 0:
            said = "did not end in time" if code is None else f"exited {code}"
            raise StepFailed("EnvironmentSetupError", f"step {self.steps[index].name!r}: its setup {said} (steps/{self.steps[index].name}/setup-stdout.txt)")
        await self._ready(index)
        self.turn_started = utcnow()

    async def _ready(self, index: int) -> None:
        check = self.steps[index].healthcheck
        if check is None:
            return
        try:
            await self.box.healthy(check)
        except NotReady as exc:
            raise StepFailed("HealthcheckError", f"step {self.steps[index].name!r}: {exc}") from None

    async def check(self) -> bool:
        """The current step's check, then the driver's `step`: whether the task goes on to the next step."""
        step = self.steps[self.current]
        checking = utcnow()
        turn = Timing(started_at=iso(self.turn_started), finished_at=iso(checking)) if self.turn_started is not None else None
        try:
            if step.artifacts:  # after the step's turn, before its check: as Harbor collects a step's
                entries = await self.box.collect_artifacts(step.artifacts, self.folder(self.current) / "artifacts")
                write_json_atomic(self.folder(self.current) / "artifacts" / "manifest.json", entries)
            verified = await self.box.verify(step.verify, self.folder(self.current) / "verifier")
        except (VerifyProblem, OSError) as exc:
            raise StepFailed("VerifierError", f"step {step.name!r}: {exc}") from None
        request = {**self._base, "step": step.name, "index": self.current, "verified": verified.request()}
        try:
            reply = await self._driver.call("step", request, OP_SECONDS["score"])
        except DriverError as exc:
            raise StepFailed("VerifierError", f"step {step.name!r}: {exc}") from None
        self.results.append({"name": step.name, "verified": verified.request(), "reply": reply})
        self.timings.append((turn, Timing(started_at=iso(checking), finished_at=iso(utcnow()))))
        return reply.get("continue") is True and self.current + 1 < len(self.steps)

    def step_results(self) -> list[StepResult]:
        """Harbor's step_results: each checked step's rewards (or the failure its check's reply names) and times."""
        out = []
        for result, (turn, check) in zip(self.results, self.timings, strict=True):
            reply = result["reply"]
            failed = reply.get("exception_type")
            out.append(StepResult(
                step_name=result["name"],
                verifier_result=VerifierResult(rewards=reply["rewards"]) if reply.get("rewards") else None,
                exception_info=ExceptionInfo(exception_type=failed, exception_message=str(reply.get("message", "")), exception_traceback="",
                                             occurred_at=check.finished_at) if failed else None,
                agent_execution=turn,
                verifier=check,
            ))
        return out

    @property
    def checked(self) -> bool:
        """Whether the current step's check has run."""
        return len(self.results) > self.current


class StepTurns:
    """The agent's side: after each step's turn, its check; a new session with the next step's prompt while the task goes on."""

    def __init__(self, run: StepRun):
        self._run = run

    async def __call__(self, transcript: list[dict[str, str]]) -> tuple[str, str] | None:
        if not await self._run.check():
            return None
        await self._run.begin(self._run.current + 1)
        return ("restart", self._run.steps[self._run.current].prompt)


async def oracle_steps(run: StepRun, solves: list[Steps | None], out: Path) -> None:
    """The oracle's solve of each step, then its check, while the task goes on (nop: `solves` all None)."""
    for index in range(len(run.steps)):
        if index:
            await run.begin(index)
        solve = solves[index] if index < len(solves) else None
        if solve is not None:
            code = await run.box.solve(solve, out.with_name(f"solve-{run.steps[index].name}-stdout.txt"))
            if code is None:
                raise StepFailed("OracleError", f"step {run.steps[index].name!r}: the oracle's solve did not end in {solve.seconds:g} s")
        if not await run.check():
            return

"""The run engine: plan the units, run them `-j` at a time, keep the job's records whole.

A unit's failure is that unit's record; the run goes on with a fresh driver.
Ctrl-C (or SIGTERM) ends every process the run started and leaves a job that
says it was cancelled; `--resume` finishes it.
"""

from __future__ import annotations

import asyncio
import copy
import shutil
import signal
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core import aio
from nullius_core.contracts.backend import Backend, RunContext, missing_methods
from nullius_core.contracts.driver import OP_SECONDS, Driver, DriverError
from nullius_core.contracts.events import RunFinished, RunStarted, UnitFinished
from nullius_core.fsutil import read_json_lines
from nullius_core.jobs.job_result import tallied
from nullius_core.jobs.replay_proof import proof_tally
from nullius_core.jobs.tally import Tally
from nullius_core.jobs.layout import BENCH_RECORD, JobDir
from nullius_core.jobs.names import Names
from nullius_core.jobs.locks import write_job_lock
from nullius_core.jobs.standard import JobRecordError, JobStandard, read_job_standard
from nullius_core.jobs.records import iso, utcnow
from nullius_core.licences.handout import remove_run
from nullius_core.plugins import ProviderServer
from nullius_core.processes import lifetime
from nullius_core.relay import upstreams
from nullius_core.relay.meter import CostMeter
from nullius_core.run import budget, scope
from nullius_core.run.bench_relay import start_bench_relay
from nullius_core.run.control_place import Spares
from nullius_core.run.environments import BoxLender
from nullius_core.run.folders import MANIFEST, changed
from nullius_core.run.job_config import job_config
from nullius_core.run.participant import start_served
from nullius_core.run.plan import PlannedTrials, resumed_work, set_aside, unit_problem
from nullius_core.run.prepare import Prepared, RunRefused, prepare, with_driver_licences
from nullius_core.run.progress import Progress, done_fields, first_line
from nullius_core.run.provider_watch import ProviderWatch
from nullius_core.run.shard import plan
from nullius_core.run.spec import RunSpec
from nullius_core.run.trial_result import TrialOutcome
from nullius_core.run.unit import RunFacts, TrialCancelled, Work, run_trial
from nullius_core.run.unit_watch import UnitWatch
from nullius_core.session import Session

if TYPE_CHECKING:
    from nullius_core.relay.server import Relay

RESULT_EVERY = 1.0  # seconds between rewrites of result.json while units run
NOT_ERRORS = ("cancelled", "held")  # outcomes with an exception_type that a progress line says as they are, without a cause


@attrs.frozen
class RunOutcome:
    job_dir: Path
    state: str
    summary: dict[str, Any]


class Engine:
    def __init__(self, session: Session, spec: RunSpec, progress: Progress | None = None):
        self.session = session
        self.spec = spec
        self.progress = progress or Progress()
        self._tally: Tally | None = None  # the results so far, as running figures (jobs/tally.py): no trial's record is held
        self._waiting: dict[str, dict[str, Any]] = {}  # rate-limited trials to run again: their first results stand until then
        self._in_flight: set[str] = set()  # the trials running now
        self._spares: Spares | None = None  # a control run's empty workspaces, removed at its end
        self._std: JobStandard | None = None
        self._told: dict[str, dict[str, Any]] = {}  # the config written, until run_started is told it  # the job's standard block, once config.json is written or read
        self._drivers: list[Driver] = []
        self._spare: Driver | None = None
        self._last_result = 0.0
        self._boxes: BoxLender | None = None
        self._watch: ProviderWatch | None = None
        self._meter: CostMeter | None = None
        self._units_task: asyncio.Task[Any] | None = None
        self._bench_relay: Relay | None = None  # the run's own relay for a driver that embeds (needs.embeddings)
        self._relay: Relay | None = None  # the agent's relay once started: stopped at the end even when the backend refused the run
        self._watch_units = UnitWatch(self.progress.stage)  # a unit that runs long says so every 30 s

    # --- the whole run -----------------------------------------------------

    def run(self, resume: Path | None = None, retry_errors: bool = False) -> RunOutcome:
        started = utcnow()
        job = JobDir(resume) if resume else JobDir(self.spec.jobs_dir / (self.spec.job_name or self._free_name(started)))
        if resume is None and job.path.exists():
            raise RunRefused(f"{job.path} exists already: choose another --job-name, or --resume it")
        # The drivers' working folder: scratch, outside the job, gone after the run.
        with tempfile.TemporaryDirectory(prefix="nullius-driver-") as scratch:
            try:
                busy = lifetime.in_use(job.path, folders=False) if resume is not None else None  # a run of it still going
                if busy:
                    raise RunRefused(busy)
                # every process the run starts ends with it, however it ends
                with lifetime.Lifetime.begin_run(job.path) as life:
                    life.scratch(Path(scratch))  # a killed run cannot remove it: its watcher does
                    prepared = prepare(self.session, self.spec, self.progress, Path(scratch))
                    if prepared.original is not None and not self.spec.model:  # the setup's default: the run's model
                        self.spec = attrs.evolve(self.spec, model=prepared.original.setup.asked)
                    return aio.run(self._main(job, prepared, started, resume is not None, retry_errors))
            except RunRefused as exc:
                # said once, by the command (`nullius: run refused: ...`); the record keeps its first line
                self.progress.record("refused", reason=str(exc).splitlines()[0])
                if resume is None and job.path.exists() and not job.config_file.exists():  # only what this run made: no job
                    shutil.rmtree(job.path, ignore_errors=True)
                raise

    def _free_name(self, started: datetime) -> str:
        """The default name, made unique when a job of the same second exists."""
        name = self.spec.default_job_name(started)
        n = 2
        candidate = name
        while (self.spec.jobs_dir / candidate).exists():
            candidate = f"{name}-{n}"
            n += 1
        return candidate

    async def _main(self, job: JobDir, prepared: Prepared, started: datetime, resuming: bool, retry_errors: bool) -> RunOutcome:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        backend = self._make_backend(prepared)
        state = "finished"
        relay = None
        served = getattr(prepared.agent, "served", None)  # a provider's own model server, started here
        prepared, licences = with_driver_licences(self.session.paths.secrets_dir, prepared, job.name)
        try:
            prepared, relay = await self._open(job, prepared, backend, served, resuming)
            facts, work, todo = await self._set_out(job, prepared, backend, relay, started, resuming, retry_errors)
            self._write_result(job, facts.standard, len(work), started, final=False, running=0)
            self.session.hooks.run_started(event=self._started_event(job, self._told.pop("config"), prepared, work))
            self._units_task = task  # --max-cost cancels it while units run, and never the clean-up after
            try:
                await self._run_all(facts, todo, backend, len(work), started)
            finally:
                self._units_task = None
            if self._watch is not None and self._watch.stop is not None:
                state = "stopped"
        except asyncio.CancelledError:
            # the budget's stop cancels the units as Ctrl-C does, but it is a stop for a reason, as the provider's is
            state = "stopped" if self._meter is not None and self._meter.stopped else "cancelled"
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            await asyncio.shield(self._close(backend))
            if self._spares is not None:
                self._spares.close()
            licences.remove()
            remove_run(job.name)
            if self._relay is not None:
                await asyncio.shield(self._relay.stop())
            if self._bench_relay is not None:
                await asyncio.shield(self._bench_relay.stop())
            if served is not None:
                await asyncio.shield(served.stop())
        return self._finish(job, started, state)

    def _make_backend(self, prepared: Prepared) -> Backend:
        try:
            backend: Backend = prepared.backend.factory()
        except Exception as exc:  # noqa: BLE001 - a backend that cannot start refuses the run, with its reason
            raise RunRefused(f"the backend {prepared.backend.name!r} cannot start: {type(exc).__name__}: {exc}") from None
        missing = missing_methods(backend)
        if missing:
            raise RunRefused(f"the backend {prepared.backend.name!r} lacks what the engine calls: {', '.join(missing)} "
                             "(the Backend protocol, nullius_core/contracts/backend.py)")
        return backend

    async def _open(self, job: JobDir, prepared: Prepared, backend: Backend, served: ProviderServer | None,
                    resuming: bool) -> tuple[Prepared, Relay | None]:
        """The run's cost meter, its relay (an agent's run) and its backend, started; nothing of a killed run still at work."""
        relay = None
        # the run's cost meter: --max-cost cancels the run as Ctrl-C does, its reason recorded
        self._meter = budget.open_meter(self.session.paths, prepared, self.spec.model, self.spec.max_cost, self._over_budget, RunRefused)
        if prepared.relay_upstream is not None:
            prepared, relay = await self._start_relay(prepared, served)
            self._relay = relay
            upstream = prepared.relay_upstream
            self._watch = ProviderWatch(upstream.provider.name, upstream.base_url, self.progress.stage, relay.cleaner.text,
                                        gated=prepared.bench.standard.gated)
            relay.watchers.append(self._watch.call)
        if prepared.bench_upstream is not None:  # before the driver's first op: it may embed from its `units` on
            prepared, self._bench_relay = await start_bench_relay(self.session, job.path, prepared, self.progress)
        context = RunContext(job=job.name, job_dir=job.path, paths=self.session.paths, progress=self.progress)
        try:
            await backend.start(context)
        except Exception as exc:  # noqa: BLE001 - a backend that cannot start refuses the run, with its reason
            raise RunRefused(f"the backend {prepared.backend.name!r} cannot start: {exc}") from None
        if not hasattr(backend, "open_box"):
            self._boxes = BoxLender(self.session.backends, context)
        if resuming:  # nothing of the killed run may still work in a folder a unit is about to reuse
            busy = await asyncio.to_thread(lifetime.in_use, job.path)
            if busy:
                raise RunRefused(busy)
        return prepared, relay

    async def _set_out(self, job: JobDir, prepared: Prepared, backend: Backend, relay: Relay | None, started: datetime,
                       resuming: bool, retry_errors: bool) -> tuple[RunFacts, PlannedTrials, Sequence[Work]]:
        """The units planned, config.json written (or read, resuming), and what every trial shares."""
        units = await self._units(prepared)
        in_scope, out_of_scope = scope.split(self.spec.variant, units, prepared.bench.ref)
        work = self._plan(in_scope)
        if resuming:
            scope.same_variant(job.path, self._standard_of(job, job.read_config()), prepared)
        config = (job_config(self.spec, self.session.versions(), job, prepared, units, work, started, backend, out_of_scope)
                  if not resuming else job.read_config())
        if not resuming:
            job.path.mkdir(parents=True, exist_ok=True)
            job.write_config(config)
            if prepared.folder is not None:  # what the folder held when the job ran: `sha256sum -c` checks it
                (job.path / MANIFEST).write_text(prepared.folder.manifest())
        self._told["config"] = config  # for run_started, then dropped: never read back whole from config.json
        std = self._standard_of(job, config)
        # held for the whole run, so its planned trials compactly; _finish uses it, not config.json read back whole
        std = self._std = attrs.evolve(std, planned_trials=Names(std.planned_trials))
        self._tally = Tally(std.kind, per_unit=std.repeat > 1, proof=proof_tally(std))  # one attempt a unit: pass@k, pass^k and attempts are empty
        if resuming and prepared.folder is not None and changed(prepared.folder, std.dataset_sha256):
            raise RunRefused(f"{changed(prepared.folder, std.dataset_sha256)}; resume it as it was, or run it as a new job")
        lifetime.current().record(job.path)  # who runs the job, for a later --resume's check
        self.progress.attach(job.path / "progress.jsonl")
        todo = self._todo(job, work, retry_errors) if resuming else work
        facts = RunFacts(job=job, job_id=std.job_id, prepared=prepared, control=self.spec.control, model=self.spec.model, standard=std,
                         relay=relay, secrets_dir=self.session.paths.secrets_dir, boxes=self._boxes, meter=self._meter,
                         hold_score=self.spec.hold_score, spares=self._spares_for(job), watch=self._watch_units)
        self.progress.concurrency = self.spec.concurrency  # the bar's estimate of the time left
        self.progress.stage("units", n=len(work), to_run=len(todo) if resuming else None, job=job.name)
        return facts, work, todo

    def _spares_for(self, job: JobDir) -> Spares | None:
        """A control run's spare workspaces (run/control_place.py); not with --hold-score, whose workspace stays in the trial."""
        if self.spec.control is None or self.spec.hold_score:
            return None
        self._spares = Spares(job.path / ".work" / "spare")
        return self._spares

    def _finish(self, job: JobDir, started: datetime, state: str) -> RunOutcome:
        """The final result.json, said and told to the observers."""
        if not job.config_file.exists():
            raise RunRefused("the run was cancelled before it started")
        std = self._std if self._std is not None else self._standard_of(job, job.read_config())
        stopped = None
        if state == "stopped":
            stopped = self._watch.stop if self._watch is not None and self._watch.stop else self._meter.stopped if self._meter else None
        write_job_lock(job, self.spec.concurrency)
        result = self._write_result(job, std, len(std.planned_trials), started, final=True, running=0, state=state, reason=stopped)
        summary = result["standard"]
        state = summary["state"]
        self.progress.stage("done", state=state, reason=summary.get("reason"), job=str(job.path), **done_fields(summary))
        self.progress.close()
        self.session.hooks.run_finished(
            event=RunFinished(job_name=job.name, job_dir=job.path, state=state, summary=summary, result=result)
        )
        return RunOutcome(job.path, state, summary)

    def _over_budget(self, reason: str) -> None:
        if self._units_task is not None:
            self.progress.stage("stopping", reason=reason)
            self._units_task.cancel()

    async def _start_relay(self, prepared: Prepared, served: ProviderServer | None) -> tuple[Prepared, Relay]:
        """The run's relay (each unit gets its own route and token on it), after the provider's own server, if it has one."""
        if served is not None:
            prepared = await start_served(prepared, served, self.spec.model, self.progress, RunRefused)
        upstream = prepared.relay_upstream
        assert upstream is not None
        from nullius_core.relay.server import Relay  # here, not at the top: a control run loads no aiohttp (14 MB)

        options: dict[str, Any] = {}
        kind = Relay
        if self.spec.replay is not None:  # the job's own record answers the calls (relay/replay.py): another relay, not a branch per call
            from nullius_core.relay.replay import ReplayRelay

            kind, options = ReplayRelay, {"source": self.spec.replay.job, "live": self.spec.replay.live}
        relay = kind(upstream, upstreams.apis(self.session, upstream), meter=self._meter,
                     pins={model: list(pin.order) for model, pin in prepared.pins.items()}, **options)
        await relay.start()
        self.progress.stage("relay", provider=upstream.provider.name, url=relay.base_url)
        return prepared, relay

    # --- planning ------------------------------------------------------------

    async def _units(self, prepared: Prepared) -> Names:
        driver = self._new_driver(prepared)
        try:
            request = {"dataset": prepared.dataset_name, **({"setup": prepared.setup_request} if prepared.setup_request else {})}
            reply = await driver.call("units", request, OP_SECONDS["units"])
        except DriverError as exc:
            raise RunRefused(f"{prepared.bench.ref}: {exc}") from None
        self._spare = driver  # the first worker takes it over
        units = reply.get("units")
        problem = unit_problem(units, prepared.units_pin)
        if problem:
            raise RunRefused(f"{prepared.bench.ref}: the driver's units: {problem}")
        return Names(units)  # type: ignore[arg-type]  # compact: 100,000 ids are ~1 MB, not ~7

    def _plan(self, units: Iterable[str]) -> PlannedTrials:
        return PlannedTrials(plan(units, self.spec.shard, self.spec.limit), self.spec.repeat)

    @staticmethod
    def _standard_of(job: JobDir, config: dict[str, Any]) -> JobStandard:
        try:
            return read_job_standard(config, job.config_file)
        except JobRecordError as exc:  # a resumed job's config.json that is not one
            raise RunRefused(f"{exc}: not a job's config.json") from None

    def _todo(self, job: JobDir, work: PlannedTrials, retry_errors: bool) -> list[Work]:
        """On resume: the trials without a standing result (those that stand are this run's results already)."""
        assert self._tally is not None
        return resumed_work(job, work, retry_errors, self._tally.add)

    # --- running -------------------------------------------------------------

    def _new_driver(self, prepared: Prepared) -> Driver:
        driver: Driver = prepared.runner.factory(prepared.launch)
        self._drivers.append(driver)
        return driver

    async def _run_all(self, facts: RunFacts, todo: Sequence[Work], backend: Backend, total: int, started: datetime) -> None:
        planned = iter(todo)  # each Work made when a worker takes it (run/plan.py), never a queue of them all
        again: deque[Work] = deque()  # a rate-limited unit's run again, after every unit waiting
        assert self._tally is not None
        done = self._tally.completed
        running = 0

        async def worker() -> None:
            nonlocal done, running
            driver = self._spare if self._spare is not None and self._spare.alive else self._new_driver(facts.prepared)
            self._spare = None
            while True:
                if self._watch is not None and self._watch.stop is not None:
                    return  # the provider failed three units in a row: no unit more is started
                item = next(planned, None) or (again.popleft() if again else None)
                if item is None:
                    return
                if not driver.alive:
                    await driver.close()
                    driver = self._new_driver(facts.prepared)
                if item.again:  # its rate-limited run's records go aside whole; this run's take their place
                    await asyncio.to_thread(set_aside, facts.job, item.trial_name)
                running += 1
                self._in_flight.add(item.trial_name)
                self._watch_units.began(item.trial_name, self._shown(item))
                facts.job.event({"type": "trial_started", "trial_name": item.trial_name, "unit": item.unit, "at": iso(utcnow())})
                try:
                    outcome = await run_trial(facts, item, driver, backend)
                except TrialCancelled as cancelled:
                    self._watch_units.ended(item.trial_name)
                    running -= 1
                    self._in_flight.discard(item.trial_name)
                    done += 1
                    self._finished(facts, item, cancelled.outcome, done, total, started, running)
                    raise asyncio.CancelledError from None
                self._watch_units.ended(item.trial_name)
                running -= 1
                self._in_flight.discard(item.trial_name)
                if self._runs_again(facts, item, outcome):
                    self._said_again(facts, item, outcome, done, total)
                    again.append(attrs.evolve(item, again=True))  # after the units waiting now: the limit may have passed
                    continue
                done += 1
                self._finished(facts, item, outcome, done, total, started, running)

        workers = [asyncio.create_task(worker()) for _ in range(max(1, min(self.spec.concurrency, len(todo))))]
        watching = asyncio.create_task(self._watch_units.watch())
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for w in workers:
                w.cancel()
            # each cancelled trial writes its own record before it ends
            await asyncio.gather(*workers, return_exceptions=True)
            self._collect_cancelled(facts)
            raise
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)  # ended here, never left pending in the loop

    def _runs_again(self, facts: RunFacts, item: Work, outcome: TrialOutcome) -> bool:
        """A unit that ended rate-limited runs once more, unless the benchmark says not (limits.run_again: false)."""
        if outcome.outcome != "rate_limited" or item.again or facts.prepared.bench.limits.run_again is False:
            return False
        return self._watch is None or self._watch.stop is None

    def _said_again(self, facts: RunFacts, item: Work, outcome: TrialOutcome, done: int, total: int) -> None:
        self._waiting[item.trial_name] = outcome.result  # stands if the run ends before it runs again
        if self._watch is not None:
            self._watch.unit(outcome.exception_type)
        facts.job.event({"type": "trial_finished", "trial_name": item.trial_name, "unit": item.unit, "outcome": outcome.outcome,
                         "reward": outcome.reward, "again": True, "at": iso(utcnow())})
        self.progress.stage("unit", i=done, of=total, unit=self._shown(item), outcome=f"error:{outcome.exception_type}",
                            again="once more, after the units waiting", cause=first_line(outcome.result))

    def _shown(self, item: Work) -> str:
        """How a progress line names a trial: its unit, or with --repeat the trial's own name."""
        return item.unit if self.spec.repeat == 1 else item.trial_name

    def _collect_cancelled(self, facts: RunFacts) -> None:
        """The trials cancelled in flight whose records were written but not counted yet."""
        assert self._tally is not None
        for name in sorted(self._in_flight):
            result = facts.job.trial(name).read_result()
            if result is not None:
                self._waiting.pop(name, None)
                self._tally.add(result)
        self._in_flight.clear()

    def _finished(self, facts: RunFacts, item: Work, outcome: TrialOutcome, done: int, total: int, started: datetime, running: int) -> None:
        assert self._tally is not None
        self._waiting.pop(item.trial_name, None)  # its run again ended: this result takes the first one's place
        self._tally.add(outcome.result)
        if self._watch is not None:
            was = self._watch.stop
            self._watch.unit(outcome.exception_type)
            if self._watch.stop is not None and was is None:
                self.progress.stage("stopping", reason=self._watch.stop, resume=f"nullius run --resume {facts.job.path}")
        facts.job.event(
            {"type": "trial_finished", "trial_name": item.trial_name, "unit": item.unit, "outcome": outcome.outcome, "reward": outcome.reward, "at": iso(utcnow())}
        )
        self.progress.stage(
            "unit",
            i=done,
            of=total,
            unit=self._shown(item),
            outcome=outcome.outcome if outcome.exception_type is None or outcome.outcome in NOT_ERRORS else f"error:{outcome.exception_type}",
            reward=None if outcome.reward is None else round(outcome.reward, 4),
            seconds=round(outcome.seconds, 1),
            cause=first_line(outcome.result) if outcome.outcome not in NOT_ERRORS else None,
            trial=str(facts.job.trial(item.trial_name).path) if outcome.exception_type is not None and outcome.outcome not in NOT_ERRORS else None,
        )
        now = time.monotonic()
        if now - self._last_result >= RESULT_EVERY:
            self._write_result(facts.job, facts.standard, total, started, final=False, running=running)
        self.session.hooks.unit_finished(
            event=UnitFinished(
                job_name=facts.job.name,
                trial_name=item.trial_name,
                trial_dir=facts.job.trial(item.trial_name).path,
                unit=item.unit,
                attempt=item.attempt,
                outcome=outcome.outcome,
                reward=outcome.reward,
                passed=outcome.passed,
                exception_type=outcome.exception_type,
                seconds=outcome.seconds,
            )
        )

    async def _close(self, backend: Backend) -> None:
        await asyncio.gather(*(d.close() for d in self._drivers), return_exceptions=True)
        await backend.close()
        if self._boxes is not None:
            await self._boxes.close()

    # --- records -------------------------------------------------------------

    def _write_result(self, job: JobDir, std: JobStandard, total: int, started: datetime, final: bool, running: int, state: str = "running",
                      reason: str | None = None) -> dict[str, Any]:
        meter = self._meter
        budget = {"max_cost_usd": meter.limit, "stopped": meter.stopped} if meter is not None else None
        tally = self._tally or Tally(std.kind, proof=proof_tally(std))
        if self._waiting:  # a rate-limited trial's first result stands until its run again ends: counted in a copy
            tally = copy.deepcopy(tally)
            for result in self._waiting.values():
                tally.add(result)
        result = tallied(std, tally, total, running=running, final=final, state=state, reason=reason, budget=budget,
                         bench_calls=read_json_lines(job.path / BENCH_RECORD / "calls.jsonl") if self._bench_relay else None)
        job.write_result(result)
        self._last_result = time.monotonic()
        return result

    def _started_event(self, job: JobDir, config: dict[str, Any], prepared: Prepared, work: PlannedTrials) -> RunStarted:
        return RunStarted(
            job_name=job.name,
            job_dir=job.path,
            benchmark=prepared.bench.ref,
            dataset=prepared.dataset_name,
            participant=self.spec.participant,
            control=self.spec.control,
            model=self.spec.model,
            backend=prepared.backend.name,
            units=tuple(work.units()),
            repeat=self.spec.repeat,
            config=config,
        )

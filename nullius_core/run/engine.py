"""The run engine: plan the units, run them `-j` at a time, keep the job's records whole.

A unit's failure is that unit's record; the run goes on with a fresh driver.
Ctrl-C (or SIGTERM) ends every process the run started and leaves a job that
says it was cancelled; `--resume` finishes it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import attrs

from nullius_core import __version__, aio
from nullius_core.jobs import stats
from nullius_core.jobs.layout import JobDir
from nullius_core.jobs.records import iso, utcnow
from nullius_core.licences import SecretStore, declared_secrets
from nullius_core.licences.handout import hand_out, remove_run
from nullius_core.plugins.registries import ProviderRefused
from nullius_core.run import lifetime
from nullius_core.run.backend import RunContext
from nullius_core.run.own_image import BoxLender
from nullius_core.run.driver import OP_SECONDS, Driver, DriverError
from nullius_core.run.events import RunFinished, RunStarted, UnitFinished
from nullius_core.relay import upstreams
from nullius_core.relay.server import Relay
from nullius_core.run.prepare import Prepared, RunRefused, prepare
from nullius_core.run.progress import Progress
from nullius_core.run.shard import Shard, plan
from nullius_core.run.spec import RunSpec
from nullius_core.run.unit import RunFacts, TrialCancelled, TrialOutcome, Work, run_trial, trial_name
from nullius_core.session import Session

PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
RESULT_EVERY = 1.0  # seconds between rewrites of result.json while units run


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
        self.results: dict[str, dict[str, Any]] = {}
        self._drivers: list[Driver] = []
        self._spare: Driver | None = None
        self._last_result = 0.0
        self._boxes: BoxLender | None = None

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
                with lifetime.Lifetime.begin_run(job.path):
                    prepared = prepare(self.session, self.spec, self.progress, Path(scratch))
                    return aio.run(self._main(job, prepared, started, resume is not None, retry_errors))
            except RunRefused as exc:
                self.progress.stage("refused", reason=str(exc).splitlines()[0])
                raise

    def _free_name(self, started: Any) -> str:
        """The default name, made unique when a job of the same second exists."""
        name = self.spec.default_job_name(started)
        n = 2
        candidate = name
        while (self.spec.jobs_dir / candidate).exists():
            candidate = f"{name}-{n}"
            n += 1
        return candidate

    async def _main(self, job: JobDir, prepared: Prepared, started: Any, resuming: bool, retry_errors: bool) -> RunOutcome:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        try:
            backend = prepared.backend.factory()
        except Exception as exc:  # noqa: BLE001 - a backend that cannot start refuses the run, with its reason
            raise RunRefused(f"the backend {prepared.backend.name!r} cannot start: {type(exc).__name__}: {exc}") from None
        state = "finished"
        relay = None
        served = getattr(prepared.agent, "served", None)  # a provider's own model server, started here
        # the driver's licences (to: driver) that are set: in its environment, files under /dev/shm
        store = SecretStore(self.session.paths.secrets_dir, prepared.entry.key)
        wanted = [s for s in declared_secrets(prepared.bench).values() if s.to == "driver"]
        licences = hand_out(store, wanted, "driver", job.name, allow_missing=True)
        if licences.values or licences.files:
            prepared = attrs.evolve(prepared, launch=attrs.evolve(prepared.launch, env={**prepared.launch.env, **licences.env()}))
        try:
            if prepared.agent is not None and prepared.agent.upstream is not None:
                prepared, relay = await self._start_relay(prepared, served)
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
            units = await self._units(prepared)
            work = self._plan(units)
            config = self._config(job, prepared, units, work, started, backend) if not resuming else job.read_config()
            if not resuming:
                job.path.mkdir(parents=True, exist_ok=True)
                job.write_config(config)
            lifetime.current().record(job.path)  # who runs the job, for a later --resume's check
            self.progress.attach(job.path / "progress.jsonl")
            todo = self._todo(job, work, retry_errors) if resuming else work
            job_id = config["standard"]["job_id"]
            facts = RunFacts(
                job=job,
                job_id=job_id,
                prepared=prepared,
                control=self.spec.control,
                model=self.spec.model,
                standard=trial_standard(config["standard"]),
                relay=relay,
                secrets_dir=self.session.paths.secrets_dir,
                boxes=self._boxes,
            )
            self.progress.stage("units", n=len(work), to_run=len(todo) if resuming else None, job=job.name)
            self._write_result(job, config, len(work), started, final=False, running=0)
            self.session.hooks.run_started(event=self._started_event(job, config, prepared, work))
            await self._run_all(facts, todo, backend, len(work), config, started)
        except asyncio.CancelledError:
            state = "cancelled"
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            await asyncio.shield(self._close(backend))
            licences.remove()
            remove_run(job.name)
            if relay is not None:
                await asyncio.shield(relay.stop())
            if served is not None:
                await asyncio.shield(served.stop())
        if not job.config_file.exists():
            raise RunRefused("the run was cancelled before it started")
        config = job.read_config()
        total = len(self._plan_from_config(config))
        result = self._write_result(job, config, total, started, final=True, running=0, state=state)
        summary = result["standard"]
        self.progress.stage("done", state=state, job=str(job.path), **_done_fields(summary))
        self.progress.close()
        self.session.hooks.run_finished(
            event=RunFinished(job_name=job.name, job_dir=job.path, state=state, summary=summary, result=result)
        )
        return RunOutcome(job.path, state, summary)

    async def _start_relay(self, prepared: Prepared, served: Any) -> tuple[Prepared, Relay]:
        """The run's relay (each unit gets its own route and token on it), after the provider's own server, if it has one."""
        agent = prepared.agent
        if served is not None:
            timer = time.monotonic()
            self.progress.stage("serve", provider=agent.upstream.provider.name, model=self.spec.model, state="start")
            try:
                base_url = await served.start()
            except ProviderRefused as exc:
                raise RunRefused(str(exc)) from None
            self.progress.stage("serve", provider=agent.upstream.provider.name, state="done", url=base_url, seconds=round(time.monotonic() - timer, 2))
            agent = attrs.evolve(agent, upstream=attrs.evolve(agent.upstream, base_url=base_url))
            prepared = attrs.evolve(prepared, agent=agent)
        relay = Relay(agent.upstream, upstreams.apis(self.session, agent.upstream))
        await relay.start()
        self.progress.stage("relay", provider=agent.upstream.provider.name, url=relay.base_url)
        return prepared, relay

    # --- planning ------------------------------------------------------------

    async def _units(self, prepared: Prepared) -> list[str]:
        driver = self._new_driver(prepared)
        try:
            reply = await driver.call("units", {"dataset": prepared.dataset_name}, OP_SECONDS["units"])
        except DriverError as exc:
            raise RunRefused(f"{prepared.bench.ref}: {exc}") from None
        self._spare = driver  # the first worker takes it over
        units = reply.get("units")
        problem = unit_problem(units, prepared.dataset.units)
        if problem:
            raise RunRefused(f"{prepared.bench.ref}: the driver's units: {problem}")
        return list(units)  # type: ignore[arg-type]

    def _plan(self, units: list[str]) -> list[Work]:
        chosen = plan(units, self.spec.shard, self.spec.limit)
        return [
            Work(unit=p.unit, position=p.position, attempt=a, trial_name=trial_name(p.unit, a, self.spec.repeat))
            for p in chosen
            for a in range(1, self.spec.repeat + 1)
        ]

    def _plan_from_config(self, config: dict[str, Any]) -> list[str]:
        return list(config["standard"]["planned_trials"])

    def _todo(self, job: JobDir, work: list[Work], retry_errors: bool) -> list[Work]:
        """On resume: the trials without a standing result; earlier attempts are moved aside."""
        todo = []
        for item in work:
            trial = job.trial(item.trial_name)
            result = trial.read_result()
            if result is not None:
                exception = result.get("exception_info")
                stands = exception is None or (exception["exception_type"] != "CancelledError" and not retry_errors)
                if stands:
                    self.results[item.trial_name] = result
                    continue
            if trial.path.exists():
                aside = job.path / ".work" / "earlier" / item.trial_name
                n = 1
                while (aside.parent / f"{item.trial_name}.{n}").exists():
                    n += 1
                aside = aside.parent / f"{item.trial_name}.{n}"
                aside.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(trial.path), str(aside))
            todo.append(item)
        return todo

    # --- running -------------------------------------------------------------

    def _new_driver(self, prepared: Prepared) -> Driver:
        driver: Driver = prepared.runner.factory(prepared.launch)
        self._drivers.append(driver)
        return driver

    async def _run_all(self, facts: RunFacts, todo: list[Work], backend: Any, total: int, config: dict[str, Any], started: Any) -> None:
        queue: asyncio.Queue[Work] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)
        done = len(self.results)
        running = 0

        async def worker() -> None:
            nonlocal done, running
            driver = self._spare if self._spare is not None and self._spare.alive else self._new_driver(facts.prepared)
            self._spare = None
            while True:
                try:
                    item = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                if not driver.alive:
                    await driver.close()
                    driver = self._new_driver(facts.prepared)
                running += 1
                facts.job.event({"type": "trial_started", "trial_name": item.trial_name, "unit": item.unit, "at": iso(utcnow())})
                try:
                    outcome = await run_trial(facts, item, driver, backend)
                except TrialCancelled as cancelled:
                    running -= 1
                    done += 1
                    self._finished(facts, item, cancelled.outcome, done, total, config, started, running)
                    raise asyncio.CancelledError from None
                running -= 1
                done += 1
                self._finished(facts, item, outcome, done, total, config, started, running)

        workers = [asyncio.create_task(worker()) for _ in range(max(1, min(self.spec.concurrency, len(todo))))]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for w in workers:
                w.cancel()
            # each cancelled trial writes its own record before it ends
            await asyncio.gather(*workers, return_exceptions=True)
            self._collect_cancelled(facts)
            raise

    def _collect_cancelled(self, facts: RunFacts) -> None:
        for trial in facts.job.trials():
            if trial.name not in self.results:
                result = trial.read_result()
                if result is not None:
                    self.results[trial.name] = result

    def _finished(self, facts: RunFacts, item: Work, outcome: TrialOutcome, done: int, total: int, config: dict[str, Any], started: Any, running: int) -> None:
        self.results[item.trial_name] = outcome.result
        facts.job.event(
            {"type": "trial_finished", "trial_name": item.trial_name, "unit": item.unit, "outcome": outcome.outcome, "reward": outcome.reward, "at": iso(utcnow())}
        )
        self.progress.stage(
            "unit",
            i=done,
            of=total,
            unit=item.unit if self.spec.repeat == 1 else item.trial_name,
            outcome=outcome.outcome if outcome.exception_type is None or outcome.outcome == "cancelled" else f"error:{outcome.exception_type}",
            reward=None if outcome.reward is None else round(outcome.reward, 4),
        )
        now = time.monotonic()
        if now - self._last_result >= RESULT_EVERY:
            self._write_result(facts.job, config, total, started, final=False, running=running)
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

    async def _close(self, backend: Any) -> None:
        await asyncio.gather(*(d.close() for d in self._drivers), return_exceptions=True)
        await backend.close()
        if self._boxes is not None:
            await self._boxes.close()

    # --- records -------------------------------------------------------------

    def _config(self, job: JobDir, prepared: Prepared, units: list[str], work: list[Work], started: Any, backend: Any) -> dict[str, Any]:
        spec = self.spec
        shard = None
        if spec.shard is not None:
            shard = {
                "index": spec.shard.index,
                "of": spec.shard.of,
                "units_total": len(units),
                "partition": "sha256(unit id) mod N",
                "planned": sorted({w.unit for w in work}, key=units.index),
                "limit": spec.limit,
            }
        bench = prepared.bench
        return {
            "job_name": job.name,
            "jobs_dir": str(job.path.parent),
            "n_attempts": spec.repeat,
            "n_concurrent_trials": spec.concurrency,
            "agents": [{"name": spec.participant, "model_name": spec.model}],
            "datasets": [{"path": str(prepared.entry.folder), "task_names": sorted({w.unit for w in work})}],
            "standard": {
                "job_id": str(uuid.uuid4()),
                "created_at": iso(started),
                "nullius": __version__,
                "benchmark": prepared.entry.key,
                "benchmark_version": bench.version,
                "benchmark_ref": bench.ref,
                "kind": bench.standard.kind,
                "dataset": prepared.dataset_name,
                "dataset_sha256": prepared.dataset.sha256,
                "units_total": len(units),
                "upstream": {k: v for k, v in attrs.asdict(bench.upstream).items() if v} if bench.upstream else None,
                "participant": spec.participant,
                "control": spec.control,
                "model": spec.model,
                "options": prepared.options,
                "backend": backend.record(),
                "unsandboxed": spec.unsandboxed,
                "consent": "--unsandboxed: the agent runs as you on this machine" if spec.unsandboxed and prepared.agent else None,
                "agent": _agent_record(prepared),
                "shard": shard,
                "launch": spec.launch_name(started),
                "repeat": spec.repeat,
                "limit": spec.limit,
                "concurrency": spec.concurrency,
                "purpose": spec.purpose,
                "planned_trials": [w.trial_name for w in work],
                "driver": {"command": prepared.launch.argv, "install": str(prepared.install_dir) if prepared.install_dir else None},
                "plugins": self.session.versions(),
                "source": prepared.entry.source(),
            },
        }

    def _write_result(self, job: JobDir, config: dict[str, Any], total: int, started: Any, final: bool, running: int, state: str = "running") -> dict[str, Any]:
        trials = list(self.results.values())
        kind = config["standard"]["kind"]
        summary = stats.summary(trials, total, kind)
        summary["state"] = state if final else "running"
        result = {
            "id": config["standard"]["job_id"],
            "started_at": config["standard"]["created_at"],
            "updated_at": iso(utcnow()),
            "finished_at": iso(utcnow()) if final else None,
            "n_total_trials": total,
            "stats": stats.job_stats(trials, total, running, kind),
            "standard": summary,
        }
        result = {k: v for k, v in result.items() if v is not None}
        job.write_result(result)
        self._last_result = time.monotonic()
        return result

    def _started_event(self, job: JobDir, config: dict[str, Any], prepared: Prepared, work: list[Work]) -> RunStarted:
        return RunStarted(
            job_name=job.name,
            job_dir=job.path,
            benchmark=prepared.bench.ref,
            dataset=prepared.dataset_name,
            participant=self.spec.participant,
            control=self.spec.control,
            model=self.spec.model,
            backend=prepared.backend.name,
            units=tuple(dict.fromkeys(w.unit for w in work)),
            repeat=self.spec.repeat,
            config=config,
        )


# What each trial's config repeats of the job's (not the plan: it names every trial).
_TRIAL_KEYS = (
    "job_id", "benchmark", "benchmark_version", "benchmark_ref", "kind", "dataset", "dataset_sha256",
    "participant", "control", "model", "options", "backend", "unsandboxed", "consent", "agent", "launch", "repeat", "purpose",
)


def trial_standard(job_standard: dict[str, Any]) -> dict[str, Any]:
    out = {k: job_standard.get(k) for k in _TRIAL_KEYS}
    shard = job_standard.get("shard")
    out["shard"] = {"index": shard["index"], "of": shard["of"]} if shard else None
    return out


def _agent_record(prepared: Prepared) -> dict[str, Any] | None:
    agent = prepared.agent
    if agent is None:
        return None
    resolved = agent.resolved
    return {
        "ref": resolved.ref,
        "key": resolved.key,
        "version": resolved.version,
        "upstream": {k: v for k, v in attrs.asdict(resolved.upstream).items() if v},
        "family": resolved.family,
        "options": agent.options,
        "protocol": agent.protocol.name if hasattr(agent, "protocol") else "jsonl-stdio",
        "provider": agent.upstream.provider.name if agent.upstream else None,
        "base_url": agent.upstream.base_url if agent.upstream else None,
        "permissions": "every permission request is granted (allow_once where offered) and recorded in the trial" if hasattr(agent, "protocol") else None,
        "source": agent.entry.source(),
    }


def unit_problem(units: Any, pinned: int) -> str | None:
    """Why a `units` reply is not a usable list of units, or None."""
    if not isinstance(units, list) or not all(isinstance(u, str) for u in units):
        return "expected a list of strings"
    bad = [u for u in units if not PLAIN_ID.match(u)]
    if bad:
        return f"ids must be plain enough to name a folder ([A-Za-z0-9._-]); not {bad[0]!r}"
    if len(set(units)) != len(units):
        seen: set[str] = set()
        dupe = next(u for u in units if u in seen or seen.add(u))  # type: ignore[func-returns-value]
        return f"ids must be unique; {dupe!r} comes twice"
    if len(units) != pinned:
        return f"{len(units)} units, but the dataset pins {pinned}"
    return None


def _done_fields(summary: dict[str, Any]) -> dict[str, Any]:
    keys = ("trials", "passed", "failed", "scored", "errored", "cancelled", "mean")
    return {k: (round(summary[k], 4) if isinstance(summary.get(k), float) else summary.get(k)) for k in keys if k in summary}


def shard_from_config(config: dict[str, Any]) -> Shard | None:
    shard = config["standard"].get("shard")
    return Shard(shard["index"], shard["of"]) if shard else None

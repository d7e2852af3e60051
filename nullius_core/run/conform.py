"""`nullius conform`: an agent's (or capability's) ports, proven by their kits, and the proofs written.

Each kit runs as a job of its own. With `--repeat K` each check runs K times
and holds when a majority passed. A port is proven when all its basic checks
hold; its proof says which skills were shown, the kit's version, the model,
the job, the backend and the upstream version it was made on. A port whose
basic checks now fail is taken back. A user's own definition is written; a
plugin's is never copied: its proofs go to the user catalogue's proofs file
(catalogue/proofs.py), beside it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

import attrs

from nullius_core.catalogue.catalogue import split_ref
from nullius_core.catalogue.proofs import write_record
from nullius_core.definitions import read_json, write_json
from nullius_core.failures import kind_of, outside_the_agent
from nullius_core.jobs.standard import read_trial_own, standard_of
from nullius_core.jobs.layout import JobDir
from nullius_core.ports.model import Port
from nullius_core.run.engine import Engine
from nullius_core.run.progress import Progress
from nullius_core.run.spec import RunSpec
from nullius_core.session import Session


@attrs.frozen(kw_only=True)
class ConformRequest:
    participant: str
    model: str | None
    jobs_dir: Path
    repeat: int = 1
    agent_options: dict[str, str] = attrs.field(factory=dict)
    provider: str | None = None
    base_url: str | None = None
    backend: str = "local"
    unsandboxed: bool = False
    concurrency: int = 2
    ports: tuple[str, ...] = ()


class ConformCancelled(Exception):
    """Ctrl-C during a kit: the kits before it are recorded, that one and those after are not."""

    def __init__(self, results: list[PortResult], job: Path):
        self.results = results
        self.job = job
        super().__init__(f"cancelled during the kit whose job is {job}")


class ConformRefused(Exception):
    """A kit's units failed for a reason not the agent's (its provider, its setup): the kits before it are recorded."""

    def __init__(self, results: list[PortResult], job: Path, cause: str):
        self.results = results
        self.job = job
        super().__init__(f"{cause}; nothing of it is proven or taken back (its job: {job})")


def not_the_agents(job: JobDir, state: str, reason: str | None) -> str | None:
    """Why a kit's job says nothing of the agent (a trial failed for its provider, or the run failed or stopped), or None."""
    if state in ("stopped", "failed"):
        return reason or f"the run {state}"
    for trial in job.trials():
        exception = (trial.read_result() or {}).get("exception_info")
        if exception is not None and outside_the_agent(exception.get("exception_type")):
            kind = kind_of(exception["exception_type"])
            first = (exception.get("exception_message") or "").strip().splitlines()
            return f"{trial.name} failed with {kind.name} ({kind.means})" + (f": {first[0]}" if first else "")  # type: ignore[union-attr]
    return None


@attrs.frozen
class PortResult:
    port: str
    proven: bool
    record: dict[str, Any]
    skipped: str | None = None


def kits_for(session: Session, family: str, only: tuple[str, ...] = ()) -> tuple[list[Port], list[tuple[str, str]]]:
    """The kits that can run now, and the ports that cannot be proven yet (with why)."""
    runnable, skipped = [], []
    for port in session.ports:
        if port.family != family or (only and port.name not in only):
            continue
        why = port.kit_cannot_run()
        if why is not None:
            skipped.append((port.name, why))
            continue
        runnable.append(port)
    return runnable, skipped


def conform(session: Session, request: ConformRequest, progress: Progress) -> list[PortResult]:
    key, version = split_ref(request.participant)
    entry, definition = session.catalogue.participant(key)
    resolved = definition.resolve(key, version)
    kits, skipped = kits_for(session, resolved.family, request.ports)
    unknown = [p for p in request.ports if p not in {k.name for k in kits} | {s for s, _ in skipped}]
    if unknown:
        raise LookupError(f"no port {unknown[0]!r} of the {resolved.family} family (see nullius list)")
    results = [PortResult(port, False, {}, skipped=why) for port, why in skipped]
    for port in kits:
        spec = RunSpec(
            benchmark=port.name,
            kit=port.name,
            participant=request.participant,
            jobs_dir=request.jobs_dir,
            dataset="checks",
            repeat=request.repeat,
            model=request.model,
            agent_options=dict(request.agent_options),
            provider=request.provider,
            base_url=request.base_url,
            backend=request.backend,
            unsandboxed=request.unsandboxed,
            concurrency=request.concurrency,
            purpose=f"conform-{port.name.replace('/', '-')}",
        )
        outcome = Engine(session, spec, progress).run()
        if outcome.state == "cancelled":
            # a kit cut short proves and disproves nothing; the kits after it do not run
            raise ConformCancelled(results, outcome.job_dir)
        cause = not_the_agents(JobDir(outcome.job_dir), outcome.state, outcome.summary.get("reason"))
        if cause is not None:
            # a provider or a setup that failed proves nothing of the agent: nothing is proven or taken back
            raise ConformRefused(results, outcome.job_dir, f"the kit {port.name}: {cause}")
        result = _judge(port, JobDir(outcome.job_dir), request, resolved.upstream.version)
        results.append(result)
        _record(session, entry, definition, version, [result])  # each kit's proof is kept as soon as it stands
    return results


def _judge(port: Port, job: JobDir, request: ConformRequest, upstream_version: str | None) -> PortResult:
    """Each check holds when a majority of its attempts passed."""
    passes: dict[str, list[bool]] = defaultdict(list)
    for trial in job.trials():
        own = read_trial_own(trial.read_result(), trial.path / "result.json")
        passes[own.unit if own is not None else trial.name].append(own is not None and own.passed is True)
    held = {check: sum(p) * 2 > len(p) for check, p in passes.items()}
    basic = port.basic
    basic_held = sum(1 for c in basic if held.get(c))
    skills = {
        name: {"passed": f"{sum(passes.get(name, []))}/{len(passes.get(name, [])) or request.repeat}", "ok": bool(held.get(name))}
        for name in port.skills
    }
    config = standard_of(job)
    record: dict[str, Any] = {
        "passed": f"{basic_held}/{len(basic)}",
        "date": date.today().isoformat(),
        "score": round(sum(sum(p) for p in passes.values()) / max(1, sum(len(p) for p in passes.values())), 4),
        "model": request.model,
        "kit_version": port.kit_version or 1,
        "job": job.name,
        "backend": config.backend_name,
        "version": upstream_version,
    }
    if skills:
        record["skills"] = skills
    if request.repeat > 1:
        record["repeat"] = request.repeat
        record["checks"] = {c: f"{sum(p)}/{len(p)}" for c, p in sorted(passes.items())}
    return PortResult(port.name, basic_held == len(basic) and len(basic) > 0, record)


def _record(session: Session, entry: Any, definition: Any, version: str | None, results: list[PortResult]) -> Path | None:
    """The proofs written: into a user's own definition, or beside a plugin's in the proofs file; None when nothing changes."""
    block = None if definition.versions is None else version or definition.versions.default
    path = _into_own_file(entry, block, results) if entry.from_user else _into_proofs_file(session, entry, block, results)
    if path is not None:
        session.forget_catalogue()
    return path


def _into_own_file(entry: Any, block: str | None, results: list[PortResult]) -> Path | None:
    raw = read_json(entry.file)
    holder = raw["versions"][block] if block is not None else raw
    proven = holder.setdefault("proven", {})
    if all(r.skipped or (not r.proven and r.port not in proven) for r in results):
        return None  # nothing is proven and nothing taken back: the file is left as it is
    for result in results:
        if result.skipped:
            continue
        if result.proven:
            proven[result.port] = result.record
        else:
            proven.pop(result.port, None)  # a claim whose basic checks fail is taken back
    if not proven:
        holder.pop("proven")
    write_json(entry.file, raw)
    return entry.file


def _into_proofs_file(session: Session, entry: Any, block: str | None, results: list[PortResult]) -> Path | None:
    """A plugin's definition is never copied: its proofs go to the user catalogue's proofs file, keyed by its digest."""
    catalogue = session.catalogue
    shipped_raw = read_json(entry.file)
    shipped = (shipped_raw["versions"][block] if block is not None else shipped_raw).get("proven") or {}
    standing = catalogue.standing(entry, block)
    local = dict(standing.record.proven) if standing.current and standing.record else {}
    changed = False
    for result in results:
        if result.skipped:
            continue
        if result.proven or result.port in shipped:
            local[result.port] = result.record  # a failing proof hides the shipped one: the claim is taken back
            changed = True
        elif result.port in local:
            local.pop(result.port)
            changed = True
    if not changed:
        return None  # no file is written for nothing
    path = catalogue.proofs_file(entry)
    write_record(path, entry.kind, entry.key, block, catalogue.digest(entry), entry.source(), local)
    return path

"""`nullius prove`: a benchmark's four checks per dataset, and the records they leave in standard.json.

units   two `units` calls give the same ids: unique, plain, as many as the pin says
leak    after `setup`, the oracle's answer and the lines it writes (and, in a task's own image, its check's lines) are not already
        in the prompt or the workspace (a reference under 12 characters is not looked for)
nop     a job of the nop control: nothing passes, or every score at the floor, up to `expect`
oracle  a job of the oracle control: everything passes, or every score at the ceiling

What passed is written per dataset, dated, naming its job; a failing check
is taken back and kept under `proven.<dataset>.failed`; a check on fewer
units does not replace one on more; a leak check with nothing to look for is
not a pass, kept under `proven.<dataset>.not_checked`. A user's own
definition is written; a plugin's is never copied: its records go to the
user catalogue's proofs file (catalogue/proofs.py), beside it.
"""

from __future__ import annotations

import copy
import json
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import attrs

from nullius_core import aio
from nullius_core.catalogue.proofs import apply_check, not_looked_for, write_record
from nullius_core.contracts.backend import init_repository
from nullius_core.contracts.driver import OP_SECONDS, DriverError
from nullius_core.contracts.refused import RunRefused
from nullius_core.definitions import Control, read_json, write_json
from nullius_core.jobs.standard import JobRecordError, read_trial_own, standard_of
from nullius_core.jobs.layout import JobDir
from nullius_core.run.engine import Engine
from nullius_core.run.plan import unit_problem
from nullius_core.licences.handout import remove_run
from nullius_core.run.prepare import Prepared, prepare, with_driver_licences
from nullius_core.run.progress import Progress
from nullius_core.run.shard import Shard, plan
from nullius_core.run.spec import RunSpec
from nullius_core.session import Session

SHORT = 12


@attrs.frozen(kw_only=True)
class ProveRequest:
    benchmark: str
    jobs_dir: Path
    dataset: str | None = None
    limit: int | None = None
    shard: Shard | None = None
    bench_options: dict[str, str] = attrs.field(factory=dict)
    jobs: dict[str, Path] = attrs.field(factory=dict)  # control -> an existing job to hold to its bound
    concurrency: int = 4


@attrs.frozen
class Check:
    name: str
    ok: bool
    record: dict[str, Any]
    checked: bool = True  # False: the check found nothing to look at (a leak check with every reference short)

    @property
    def state(self) -> str:
        return "not checked" if not self.checked else "passed" if self.ok else "failed"


def prove(session: Session, request: ProveRequest, progress: Progress) -> dict[str, list[Check]]:
    from nullius_core.catalogue.listing import resolve_benchmark

    entry, bench = resolve_benchmark(session.catalogue, request.benchmark)
    if not request.dataset and not bench.datasets and bench.dataset_folders is not None:
        raise RunRefused(f"{bench.ref} takes a folder as its dataset: prove it with --dataset PATH ({bench.dataset_folders.summary})")
    datasets = [request.dataset] if request.dataset else list(bench.datasets)
    out: dict[str, list[Check]] = {}
    for asked in datasets:
        name, checks = _prove_dataset(session, request, asked, progress)
        out[name] = checks
        _record(session, entry, bench.version, name, checks)
        session.forget_catalogue()
    return out


def _spec(request: ProveRequest, dataset: str, control: str) -> RunSpec:
    return RunSpec(
        benchmark=request.benchmark,
        participant=control,
        jobs_dir=request.jobs_dir,
        dataset=dataset,
        limit=request.limit,
        shard=request.shard,
        bench_options=dict(request.bench_options),
        concurrency=request.concurrency,
        purpose=f"prove-{control}",
    )


def _prove_dataset(session: Session, request: ProveRequest, asked: str, progress: Progress) -> tuple[str, list[Check]]:
    """The dataset's name (a folder's own, for --dataset PATH) and its checks."""
    today = date.today().isoformat()
    with tempfile.TemporaryDirectory(prefix="nullius-prove-") as scratch:
        prepared = prepare(session, _spec(request, asked, "oracle"), progress, Path(scratch) / "driver")
        # the driver's own licences (to: driver), as a run's driver has them: its units and setups may need them
        licensed, licences = with_driver_licences(session.paths.secrets_dir, prepared, f"prove-{Path(scratch).name}")
        try:
            units, leak = aio.run(_units_and_leak(licensed, request, Path(scratch)))
        finally:
            licences.remove()
            remove_run(f"prove-{Path(scratch).name}")
    dataset = prepared.dataset_name
    checks = [units]
    if not units.ok:
        return dataset, _dated(checks, today, request, prepared)  # no control runs on units that are not sound
    checks.append(leak)
    controls = prepared.bench.controls
    for control in ("nop", "oracle"):
        declared = getattr(controls, control) if controls else None
        job = request.jobs.get(control)
        if job is None:
            outcome = Engine(session, _spec(request, asked, control), progress).run()
            job = outcome.job_dir
        checks.append(_control_check(control, declared, JobDir(job), prepared, dataset, request))
    return dataset, _dated(checks, today, request, prepared)


def _dated(checks: list[Check], today: str, request: ProveRequest, prepared: Prepared) -> list[Check]:
    for check in checks:
        check.record["date"] = today
        if request.shard is not None:
            check.record["shard"] = str(request.shard)
        if prepared.folder is not None:  # which folder, as it was: a changed folder is another dataset
            check.record["folder"] = str(prepared.folder.path)
            check.record["sha256"] = prepared.folder.sha256
    return checks


async def _units_and_leak(prepared: Prepared, request: ProveRequest, scratch: Path) -> tuple[Check, Check]:
    driver = prepared.runner.factory(prepared.launch)
    try:
        try:
            first = (await driver.call("units", {"dataset": prepared.dataset_name}, OP_SECONDS["units"])).get("units")
            second = (await driver.call("units", {"dataset": prepared.dataset_name}, OP_SECONDS["units"])).get("units")
        except DriverError as exc:
            return Check("units", False, {"units": 0, "failed": str(exc)}), Check("leak", False, {})
        problem = unit_problem(first, prepared.units_pin) or (None if first == second else "two calls gave different ids")
        if problem:
            return Check("units", False, {"units": len(first) if isinstance(first, list) else 0, "failed": problem}), Check("leak", False, {})
        units = Check("units", True, {"units": len(first), "passed": f"{len(first)} ids, the same twice, unique"})
        chosen = plan(list(first), request.shard, request.limit)
        return units, await _leak(driver, prepared, [p.unit for p in chosen], scratch, request.limit)
    finally:
        await driver.close()


def _check_lines(setup: dict[str, Any], source: Path) -> set[str]:
    """A task in its own image: the lines of the check's files (verify.copy, verify.write; each step's), which the prompt must not hold.

    Comments are left out (they say what a check does, not what it
    expects), and so is a table's header (the first line of a .csv or .tsv:
    it names the columns, which the prompt is expected to state).
    """
    checks = [setup.get("verify")] + [s.get("verify") for s in setup.get("steps") or [] if isinstance(s, dict)]
    texts: list[str] = []
    for verify in (v for v in checks if isinstance(v, dict)):
        texts += [text for text in (verify.get("write") or {}).values() if isinstance(text, str)]
        for folder in (verify.get("copy") or {}):
            root = (source / str(folder)).resolve()
            if root.is_relative_to(source.resolve()) and root.is_dir():
                texts += [_without_header(path) for path in sorted(root.rglob("*")) if path.is_file()]
    return {line for text in texts for line in (raw.strip() for raw in text.splitlines()) if len(line) >= SHORT and not line.startswith("#")}


def _without_header(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""
    return text.split("\n", 1)[1] if path.suffix.lower() in (".csv", ".tsv") and "\n" in text else text


def _file_lines(folder: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in folder.rglob("*"):
        if ".git" in path.relative_to(folder).parts or not path.is_file():
            continue
        try:
            out[str(path.relative_to(folder))] = {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}
        except (UnicodeDecodeError, OSError):
            continue
    return out


async def _leak(driver: Any, prepared: Prepared, units: list[str], scratch: Path, limit: int | None) -> Check:
    declared = prepared.bench.controls.oracle if prepared.bench.controls else None
    allowed = declared is not None and declared.in_prompt is not None
    looked_for = short = clean = 0
    leaked: list[str] = []
    for unit in units:
        workspace = scratch / "leak" / unit
        init_repository(workspace)
        base = {"unit": unit, "dataset": prepared.dataset_name, "dir": str(workspace)}
        try:
            setup = await driver.call("setup", base, OP_SECONDS["setup"])
            before = _file_lines(workspace)
            answer = (await driver.call("oracle", base, OP_SECONDS["oracle"])).get("answer") or ""
        except DriverError as exc:
            return Check("leak", False, {"units": len(units), "failed": f"{unit}: {exc}"})
        after = _file_lines(workspace)
        written = {line for path, lines in after.items() for line in lines - before.get(path, set()) if len(line) >= SHORT}
        sought = ([answer.strip()] if len(answer.strip()) >= SHORT else []) + sorted(written | _check_lines(setup, prepared.source_dir))
        if not sought:
            short += 1
            continue
        looked_for += 1
        haystack = [str(setup.get("prompt", ""))] + ["\n".join(lines) for lines in before.values()]
        found = [s for s in sought if any(s in h for h in haystack)]
        if found:
            leaked.append(unit)
        else:
            clean += 1
    record: dict[str, Any] = {"units": len(units), "looked_for": looked_for, "short": short, "passed": f"{clean}/{looked_for}"}
    if limit is not None:
        record["limit"] = limit
    if looked_for == 0:
        # nothing was looked for, so nothing is known of a leak: not a pass
        record["passed"] = None
        record["not_checked"] = (f"nothing to look for: in each of the {len(units)} units the oracle's answer and every line it wrote "
                                 f"are under {SHORT} characters" if units else "no unit was planned")
        return Check("leak", False, {k: v for k, v in record.items() if v is not None}, checked=False)
    if allowed:
        record["in_prompt"] = len(leaked)
    elif leaked:
        record["leaked"] = leaked[:20]
    return Check("leak", allowed or not leaked, record)


def _control_check(control: str, declared: Control | None, job: JobDir, prepared: Prepared, dataset: str, request: ProveRequest) -> Check:
    config = standard_of(job)
    kind = prepared.bench.standard.kind
    expect = declared.expect if declared and declared.expect else None
    bound = {"at_most": 0.0} if control == "nop" else {"at_least": 1.0}
    if expect is not None:
        bound = {k: v for k, v in attrs.asdict(expect).items() if v is not None}
    problems = []
    if (config.benchmark_ref, config.control, config.dataset) != (prepared.bench.ref, control, dataset):
        problems.append(f"the job is of {config.benchmark_ref} {config.control} on {config.dataset}")
    n = passed = errors = 0
    total = 0.0
    against: list[str] = []  # the trials whose score breaks the bound: a nop that passed, an oracle that did not
    errored: list[str] = []
    for trial in job.trials():
        result = trial.read_result()
        if result is None or (result.get("verifier_result") is None and result.get("exception_info") is None):
            problems.append(f"{trial.name} has neither a score nor an error")
            continue
        try:
            own = read_trial_own(result, trial.path / "result.json")
        except JobRecordError as exc:
            problems.append(str(exc))
            continue
        if own is None or (own.control, own.benchmark, own.dataset) != (control, prepared.bench.ref, dataset):
            problems.append(f"{trial.name}'s record is not of this control, benchmark and dataset")
        n += 1
        if result.get("exception_info") is not None:
            errors += 1
            errored.append(f"{trial.name} ({result['exception_info'].get('exception_type')})")
            continue
        reward = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            problems.append(f"{trial.name}'s record has no reward and no error")  # a job's record, not a proof
            continue
        total += reward
        passed += 1 if own.passed else 0
        if _against(control, kind, bool(own.passed), float(reward), bound):
            against.append(trial.name)
    value = (passed / n if kind == "pass" else total / n) if n else 0.0
    within = value <= bound["at_most"] if "at_most" in bound else value >= bound["at_least"]
    ok = n > 0 and errors == 0 and within and not problems
    record: dict[str, Any] = {
        "passed": f"{passed}/{n}" if kind == "pass" else f"mean {value:.4f} over {n}",
        "value": round(value, 6),
        "expect": bound,
        "units": n,
        "job": job.name,
        "source": declared.source if declared else "nullius",
    }
    limit = config.limit if control in request.jobs else request.limit
    if limit is not None:
        record["limit"] = limit
    if errors:
        record["errors"] = errors
    record.update(_named(control, against if not ok else [], errored))
    if problems:
        record["problems"] = problems[:20]
    return Check(control, ok, record)


def _named(control: str, against: list[str], errored: list[str]) -> dict[str, list[str]]:
    """The trials a failed control check names (at most 50 of each): those whose score breaks its bound, and those that erred."""
    named = {("passing" if control == "nop" else "failing"): against[:50], "errored": errored[:50]}
    return {key: value for key, value in named.items() if value}


def _against(control: str, kind: str, passed: bool, reward: float, bound: dict[str, float]) -> bool:
    """Whether one trial's score alone breaks the control's bound (what prove names)."""
    if kind == "pass":
        return passed if control == "nop" else not passed
    return reward > bound["at_most"] if "at_most" in bound else reward < bound["at_least"]


def _record(session: Session, entry: Any, version: str | None, dataset: str, checks: list[Check]) -> Path:
    """The checks' records: into a user's own standard.json, or beside a plugin's in the proofs file (never a copy)."""
    catalogue = session.catalogue
    standing = (catalogue.load(entry).resolve(entry.key, version).proven.get(dataset) or {})  # what stands now, shipped and local
    if entry.from_user:
        raw = read_json(entry.file)
        holder = raw["versions"][version] if version and "versions" in raw else raw
        proven = holder.setdefault("proven", {})
        proven[dataset] = _applied(proven.get(dataset) or {}, checks, standing)
        write_json(entry.file, raw)
        return entry.file
    local_standing = catalogue.standing(entry, version)
    local = dict(local_standing.record.proven) if local_standing.current and local_standing.record else {}
    local[dataset] = _applied(local.get(dataset) or {}, checks, standing)
    path = catalogue.proofs_file(entry)
    write_record(path, "benchmark", entry.key, version, catalogue.digest(entry), entry.source(), {k: v for k, v in local.items() if v})
    return path


def _applied(records: dict[str, Any], checks: list[Check], standing: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(records)
    for check in checks:
        if check.state == "passed":
            old = standing.get(check.name)
            if old and "failed" not in old and not not_looked_for(check.name, old) and int(old.get("units", 0)) > int(check.record.get("units", 0)):
                continue  # a check on fewer units does not replace one on more
        apply_check(out, check.name, check.state, check.record)
    return out


def as_json(result: dict[str, list[Check]]) -> str:
    return json.dumps({ds: {c.name: {"ok": c.ok, "checked": c.checked, **c.record} for c in checks} for ds, checks in result.items()}, indent=2)

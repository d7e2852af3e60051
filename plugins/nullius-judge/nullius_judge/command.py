"""`nullius assess JOB`: evaluations of an existing job's trials by an ACP judge, appended, then summarized.

The assessment is itself a Nullius run: the internal benchmark `judge`, whose
units are the evaluations to make (`<trial>-judge-<k>`, k = 1..N), with the
judge as its agent. So the judge is started, given its workspace, metered
by its own relay (which holds the key) and ended exactly as any agent is; its
calls are recorded and priced apart from the assessed agent's. The run lives in
`JOB/.work/assess/<time>/`, which Harbor does not read.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from nullius_judge.evals import judge_of, record_eval, unit_of
from nullius_judge.materials import Sources, Trial, trials_of, write_unit
from nullius_judge.rubric import RubricError
from nullius_judge.summary import SUMMARY_FILE, job_summary, write_json, write_trial_summary

BENCHMARK = "judge"


class Refused(Exception):
    pass


def _place(job: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d__%H-%M-%S")
    base = job / ".work" / "assess"
    place, n = base / stamp, 1
    while place.exists():
        n += 1
        place = base / f"{stamp}-{n}"
    return place


def _materials(trials: list[Trial], sources: Sources, into: Path, opts: dict[str, Any]) -> dict[str, tuple[Trial, str, int]]:
    """Every trial's materials, then one unit per evaluation; unit -> (trial, fingerprint, k).

    All are written before the judge starts, so a rubric problem refuses the whole assessment first.
    """
    units: dict[str, tuple[Trial, str, int]] = {}
    for trial in trials:
        fingerprint = write_unit(trial, sources, into / trial.name, opts["include_trajectory"])
        for k in range(1, opts["eval_repetitions"] + 1):
            unit = unit_of(trial.name, k)
            (into / unit).mkdir()
            (into / unit / "unit.json").write_text(json.dumps({"trial": trial.name, "evaluation": k}))
            units[unit] = (trial, fingerprint, k)
    return units


def _run_args(judge: str, materials: Path, place: Path, opts: dict[str, Any]) -> list[str]:
    args = [sys.executable, "-m", "nullius_core", "run", BENCHMARK, judge, "--dataset", str(materials),
            "-j", str(opts["max_concurrent_eval"]),
            "--jobs-dir", str(place), "--job-name", "run", "--backend", opts["backend"]]
    for flag in ("model", "provider", "base_url"):
        if opts[flag]:
            args += ["--" + flag.replace("_", "-"), opts[flag]]
    return args + (["--unsandboxed"] if opts["unsandboxed"] else [])


def _run_judge(args: list[str]) -> int:
    """The judge's run, its output on our stderr, ended with us.

    SIGTERM is passed on, and so is Ctrl-C: the run then ends every process it
    started (as any `nullius run` does) and leaves a cancelled job, whose
    finished evaluations are still recorded.
    """
    child = subprocess.Popen(args, stdout=sys.stderr, stderr=sys.stderr)
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: child.send_signal(signum))
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                child.send_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _record(run_job: Path, units: dict[str, tuple[Trial, str, int]], include_trajectory: bool) -> dict[str, list[Path]]:
    judge = judge_of(run_job)
    added: dict[str, list[Path]] = {}
    done = []
    for folder in run_job.iterdir():
        if folder.name in units and (folder / "result.json").is_file():
            info = json.loads((folder / "result.json").read_text()).get("exception_info") or {}
            if info.get("exception_type") == "CancelledError":  # not an evaluation: the run was stopped before it ended
                continue
            done.append(units[folder.name] + (folder,))
    for trial, fingerprint, _, folder in sorted(done, key=lambda d: (d[0].name, d[2])):
        added.setdefault(trial.name, []).append(record_eval(trial.folder, run_job, folder, fingerprint, judge, include_trajectory))
    return added


def _unpriced(added: dict[str, list[Path]]) -> set[str]:
    """The judge models of this run's evaluations that made calls the relay could not price."""
    found = set()
    for paths in added.values():
        for path in paths:
            record = json.loads(path.read_text())
            usage = record.get("usage") or {}
            if usage.get("cost_usd") is None and (usage.get("n_input_tokens") or usage.get("n_output_tokens")):
                found.add(record["judge"].get("model") or "?")
    return found


def _line(summary: dict[str, Any], added: int) -> str:
    chosen = summary["dominant"] or {}
    top = next((c for c in summary["clusters"] if (c["judge_model"], c["rubric_fingerprint"])
                == (chosen.get("judge_model"), chosen.get("rubric_fingerprint"))), None)
    score = "no graded evaluation"
    if top and top["normalized_score"]["n"]:
        s = top["normalized_score"]
        score = f"{s['mean']:.3f}" + (f" ± {s['std']:.3f}" if s["std"] is not None else "") + f" (n={s['n']})"
    ungraded = sum(len(c["ungraded"]) for c in summary["clusters"])
    return f"{summary['trial']}: +{added} evaluation(s), {summary['n_evals']} in all, {ungraded} ungraded; dominant {score}"


def _report(summaries: list[dict[str, Any]], added: dict[str, list[Path]], job: Path) -> None:
    for summary in summaries:
        click.echo(_line(summary, len(added.get(summary["trial"], []))))
    for model in sorted(_unpriced(added)):
        click.echo(f"nullius: warning: judge model {model!r} has no price: its cost is null (add it to prices.json); the assessment stands", err=True)
    click.echo(f"summaries: {job / SUMMARY_FILE} and each trial's {SUMMARY_FILE}")


def assess(job: Path, opts: dict[str, Any]) -> int:
    trials = [t for t in trials_of(job) if not opts["trial"] or t.name in opts["trial"]]
    if not trials:
        raise Refused(f"{job} holds no trial (a folder with result.json and config.json) to assess")
    place = _place(job)
    sources = Sources(rubric=opts["rubric"], criteria_dir=opts["criteria_dir"])
    try:
        units = _materials(trials, sources, place / "materials", opts)
    except RubricError:
        shutil.rmtree(place, ignore_errors=True)  # refused before any judge: nothing left behind
        raise
    code = _run_judge(_run_args(opts["judge"], place / "materials", place, opts))
    run_job = place / "run"
    if not (run_job / "config.json").is_file():
        shutil.rmtree(place, ignore_errors=True)  # nothing ran: leave no half-made assessment behind
        raise Refused(f"the judge's run did not start (exit status {code}); nothing was added")
    added = _record(run_job, units, opts["include_trajectory"])
    summaries = [write_trial_summary(t.folder) for t in trials_of(job)]
    summaries = [s for s in summaries if s["n_evals"]]
    write_json(job / SUMMARY_FILE, job_summary(job, summaries))
    _report([s for s in summaries if s["trial"] in {t.name for t in trials}], added, job)
    return code if code in (0, 130) else 1  # 130: the run was cancelled (a signal), what it finished recorded


@click.command("assess")
@click.argument("job", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--judge", default="claude", show_default=True, help="The judge: an agent offering agent.workspace/v1 (claude, codex, reference, ...).")
@click.option("--model", help="The judge's model: every call of the judge goes as this model.")
@click.option("--provider", help="The provider the judge's relay forwards to (default: the user settings').")
@click.option("--base-url", help="The provider's base URL, ending at its /v1.")
@click.option("--eval-repetitions", type=click.IntRange(min=1), default=3, show_default=True, help="Evaluations per trial.")
@click.option("--max-concurrent-eval", type=click.IntRange(min=1), default=2, show_default=True, help="Evaluations at a time.")
@click.option("--include-trajectory", is_flag=True, help="Show the judge the agent's trajectory too.")
@click.option("--rubric", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="assessment_dimensions.json, for a benchmark whose tasks keep none.")
@click.option("--criteria-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Criteria per unit: DIR/<unit>.md, DIR/<unit>/assessment_criteria.md, else DIR/assessment_criteria.md.")
@click.option("--trial", multiple=True, help="Assess only this trial. Repeatable.")
@click.option("--backend", default="local", show_default=True, help="Where the judge runs.")
@click.option("--unsandboxed", is_flag=True, help="Consent to run the judge on the local backend, which is not a sandbox.")
def assess_command(job: Path, **opts: Any) -> None:
    """Judge JOB's trials against their rubric: N evaluations each, appended; summaries per (judge model, rubric)."""
    try:
        code = assess(job.resolve(), opts)
    except (Refused, RubricError) as exc:
        click.echo(f"nullius: assess refused: {exc}", err=True)
        sys.exit(2)
    sys.exit(code)

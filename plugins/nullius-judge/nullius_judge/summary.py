"""`assessment_summary.json`: a trial's evaluations aggregated within one (judge model, rubric fingerprint) cluster.

A different judge model or a changed rubric is a different measurement:
their evaluations are never averaged together. Ungraded evaluations are
counted and listed, never part of a mean. The cluster with the most graded
evaluations (ties: the newest) is `dominant`. The job's summary is the mean
over trials of each trial's cluster mean, clustered the same way.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from nullius_judge.evals import read_evals

SUMMARY_FILE = "assessment_summary.json"


def stats(values: list[float]) -> dict[str, Any]:
    """mean, sample std (n-1; null below two values), min, max and n."""
    if not values:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    return {"n": len(values), "mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else None,
            "min": min(values), "max": max(values)}


def _key(record: dict[str, Any]) -> tuple[str, str]:
    return ((record.get("judge") or {}).get("model") or "", record.get("rubric_fingerprint") or "")


def _cluster(key: tuple[str, str], members: list[dict[str, Any]]) -> dict[str, Any]:
    graded = [m for m in members if m.get("graded")]
    dims: dict[str, dict[str, Any]] = {}
    for dim in (graded[0]["dimensions"] if graded else []):  # one fingerprint: the same dimensions in every member
        values = [float(next(d["score"] for d in m["dimensions"] if d["name"] == dim["name"])) for m in graded]
        dims[dim["name"]] = {"max_score": dim["max_score"], **stats(values)}
    costs = [(m.get("usage") or {}).get("cost_usd") for m in members]
    return {
        "judge_model": key[0], "rubric_fingerprint": key[1],
        "evals": [m["index"] for m in members], "graded": [m["index"] for m in graded],
        "ungraded": [{"index": m["index"], "reason": m.get("ungraded_reason")} for m in members if not m.get("graded")],
        "newest": max((m.get("finished_at") or "") for m in members),
        "normalized_score": stats([float(m["normalized_score"]) for m in graded]),
        "dimensions": dims,
        "judge_cost_usd": None if any(c is None for c in costs) else sum(costs),
    }


def dominant(clusters: list[dict[str, Any]], size: str) -> dict[str, Any] | None:
    """The largest cluster by `size` (ties: the newest)."""
    return max(clusters, key=lambda c: (len(c[size]) if isinstance(c[size], list) else c[size], c["newest"]), default=None)


def trial_summary(trial: Path) -> dict[str, Any]:
    evals = read_evals(trial)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in evals:
        groups.setdefault(_key(record), []).append(record)
    clusters = [_cluster(k, v) for k, v in groups.items()]
    top = dominant(clusters, "graded")
    return {"trial": trial.name, "n_evals": len(evals), "clusters": clusters,
            "dominant": None if top is None else {"judge_model": top["judge_model"], "rubric_fingerprint": top["rubric_fingerprint"]}}


def write_trial_summary(trial: Path) -> dict[str, Any]:
    summary = trial_summary(trial)
    write_json(trial / SUMMARY_FILE, summary)
    return summary


def job_summary(job: Path, summaries: list[dict[str, Any]]) -> dict[str, Any]:
    per: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for summary in summaries:
        for cluster in summary["clusters"]:
            if cluster["graded"]:
                per.setdefault((cluster["judge_model"], cluster["rubric_fingerprint"]), []).append((summary["trial"], cluster))
    clusters = []
    for (model, fp), rows in per.items():
        names = sorted({n for r in rows for n in r[1]["dimensions"]})
        clusters.append({
            "judge_model": model, "rubric_fingerprint": fp, "trials": [t for t, _ in rows], "n_trials": len(rows),
            "newest": max(c["newest"] for _, c in rows),
            "normalized_score": stats([c["normalized_score"]["mean"] for _, c in rows]),
            "dimensions": {n: stats([c["dimensions"][n]["mean"] for _, c in rows if n in c["dimensions"]]) for n in names},
        })
    top = dominant(clusters, "n_trials")
    costs = [c["judge_cost_usd"] for s in summaries for c in s["clusters"]]
    return {"job": job.name, "trials_assessed": len(summaries), "clusters": clusters,
            "judge_cost_usd": None if any(c is None for c in costs) else sum(costs),  # every evaluation's, never the agent's
            "dominant": None if top is None else {"judge_model": top["judge_model"], "rubric_fingerprint": top["rubric_fingerprint"],
                                                   "normalized_score": top["normalized_score"]}}


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)

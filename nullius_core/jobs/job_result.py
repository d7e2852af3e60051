"""A job's result.json from its trials: Harbor's JobResult fields, and Nullius's summary under `standard`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nullius_core.failures import final_state
from nullius_core.jobs.tally import Tally
from nullius_core.jobs.records import iso, utcnow
from nullius_core.jobs.replay_proof import proof_tally
from nullius_core.jobs.standard import JobStandard
from nullius_core.relay.pins import added, served as served_by
from nullius_core.relay.usage import added_routes, routes_used


def job_result(std: JobStandard, trials: Iterable[dict[str, Any]], total: int, *, running: int = 0, final: bool, state: str = "running",
               reason: str | None = None, started_at: str | None = None, budget: dict[str, Any] | None = None,
               bench_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`total` trials planned, `trials` with results; a final result's state is the failures table's (`final_state`).

    `budget` (`max_cost_usd`, `stopped`) joins the cost block of a run with --max-cost; `bench_calls`, the calls of the run's
    own relay (a driver that embeds), are the benchmark's cost, in `routes.benchmark`, and count in who served the job.
    """
    tally = Tally(std.kind, proof=proof_tally(std))
    for trial in trials:
        tally.add(trial)
    return tallied(std, tally, total, running=running, final=final, state=state, reason=reason, started_at=started_at, budget=budget,
                   bench_calls=bench_calls)


def tallied(std: JobStandard, tally: Tally, total: int, *, running: int = 0, final: bool, state: str = "running",
            reason: str | None = None, started_at: str | None = None, budget: dict[str, Any] | None = None,
            bench_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """result.json from a tally of the trials (jobs/tally.py): what `job_result()` says of the same trials, in time that does not grow with them."""
    summary = tally.summary(total)
    summary["state"], why = final_state(summary, state, reason) if final else ("running", None)
    if why:
        summary["reason"] = why
    summary["cost"] = tally.cost()
    combined = tally.attempts()
    if combined is not None:  # --repeat's attempts, a unit's parts solved in any of them (jobs/attempts.py)
        summary["attempts"] = combined
    routes = added_routes([*tally.routes, routes_used(bench_calls or [])])
    if routes:  # the simulated users' and judges' calls, and the benchmark's own relay's, apart from the agents'
        summary["routes"] = routes
    served = added([*tally.served, served_by(bench_calls, {}) if bench_calls else None])
    if served is not None:  # who served the answered calls, and whether each pin held (relay/pins.py)
        summary["served"] = served
    if std.out_of_scope:  # a scoped variant's units left out: skipped, never counted as errors or in the mean
        summary["skipped"] = {"units": len(std.out_of_scope), "reason": "outside the variant's scope (variant.toml tasks)",
                              "names": list(std.out_of_scope)}
    if std.variant is not None or std.reasoning_effort:
        summary["variant"] = {"name": std.variant.name, "digest": std.variant.digest} if std.variant is not None else None
        summary["reasoning_effort"] = std.reasoning_effort
    replay = tally.proof.replay() if tally.proof is not None else None
    if replay is not None:  # nullius replay: against its source job, trial by trial (jobs/replay_proof.py)
        summary["replay"] = replay
    rescore = tally.proof.rescore() if tally.proof is not None else None
    if rescore is not None:  # nullius rescore: its source, and the trials that kept the source's record
        summary["rescore"] = rescore
    if budget is not None and summary["cost"] is not None:
        summary["cost"].update(budget)
    now = iso(utcnow())
    result = {
        "id": std.job_id,
        "started_at": started_at or std.created_at,
        "updated_at": now,
        "finished_at": now if final else None,
        "n_total_trials": total,
        "stats": tally.stats(total, running),
        "standard": summary,
    }
    return {k: v for k, v in result.items() if v is not None}

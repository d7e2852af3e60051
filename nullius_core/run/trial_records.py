"""What a trial's records say of its participant: who it was, its tokens, its trajectory, its timeline."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from nullius_core import __version__
from nullius_core.jobs.layout import TrialDir
from nullius_core.jobs.records import (
    AgentContext,
    AgentInfo,
    ModelInfo,
    Step,
    Trajectory,
    TrajectoryAgent,
    iso,
)
from nullius_core.jobs.records import load as structure_record
from nullius_core.relay.usage import calls_cost, from_folder
from nullius_core.run.agent_unit import AgentRun

if TYPE_CHECKING:
    from nullius_core.run.unit import RunFacts


def agent_info(facts: RunFacts) -> AgentInfo:
    agent, original = facts.prepared.agent, facts.prepared.original
    if original is not None:  # the upstream's own answerer: its version is the benchmark's upstream's
        upstream = facts.prepared.bench.upstream
        return AgentInfo(name=facts.participant, version=(upstream.version if upstream else None) or facts.prepared.bench.version or "unknown",
                         model_info=ModelInfo(name=original.setup.sent, provider=original.upstream.provider.name))
    if agent is None:
        return AgentInfo(name=facts.participant, version=__version__)
    return AgentInfo(
        name=facts.participant,
        version=agent.resolved.upstream.version or agent.resolved.version or "unknown",
        core=agent.resolved.upstream.core,
        model_info=ModelInfo(name=str(facts.model), provider=agent.upstream.provider.name) if agent.upstream and facts.model else None,
    )


def usage_of(trial: TrialDir, provider: str | None = None, reported_usd: float | None = None) -> AgentContext | None:
    """The agent's tokens and cost, as its relay recorded them (a control calls no model: none).

    What the agent reported it cost (Claude's ACP does) is kept beside, as a cross-check, never counted.
    """
    context = from_folder(trial.work / "relay", provider)
    if context is None:
        return None
    context["metadata"]["cost"]["agent_reported_usd"] = reported_usd
    return structure_record(context, AgentContext)


def agent_trajectory(
    facts: RunFacts, raw_steps: list[dict[str, Any]], run_calls: list[dict[str, Any]], usage: AgentContext | None,
    stop_reason: str | None, grants: list[dict[str, Any]],
) -> Trajectory:
    """The steps, numbered, each agent step with the model calls that started before it."""
    calls = sorted((c for c in run_calls if c.get("kind", "agent") == "agent"), key=lambda c: c.get("started", ""))
    steps: list[Step] = []
    pending = list(calls)
    for number, raw in enumerate(raw_steps, start=1):
        metrics = None
        if raw.get("source") == "agent":
            stamp = raw.get("timestamp") or ""
            mine = [c for c in pending if (c.get("started") or "") <= stamp]
            pending = [c for c in pending if c not in mine]
            if mine:
                metrics = {
                    "prompt_tokens": sum((c.get("usage") or {}).get("input") or 0 for c in mine),
                    "completion_tokens": sum((c.get("usage") or {}).get("output") or 0 for c in mine),
                    "cached_tokens": sum((c.get("usage") or {}).get("cached_input") or 0 for c in mine),
                    "cost_usd": calls_cost(mine)["as_served_usd"],
                }
        steps.append(Step(step_id=number, metrics=metrics, model_name=facts.model if raw.get("source") == "agent" else None, **raw))
    if not steps:
        steps.append(Step(step_id=1, source="user", message=""))
    agent = facts.prepared.agent
    final = None
    if usage is not None:
        final = {
            "total_prompt_tokens": usage.n_input_tokens,
            "total_completion_tokens": usage.n_output_tokens,
            "total_cached_tokens": usage.n_cache_tokens,
            "total_cost_usd": usage.cost_usd,
            "total_steps": len(steps),
        }
    return Trajectory(
        session_id=facts.job.name,
        agent=TrajectoryAgent(name=agent.resolved.key, version=agent.resolved.upstream.version or "unknown", model_name=facts.model),
        steps=steps,
        final_metrics=final,
        extra={"nullius_stop_reason": stop_reason, "nullius_grants": grants},
    )


def trace_of(run: AgentRun) -> dict[str, Any]:
    """The unit's timeline: model calls as the relay timed them, tool calls as Nullius saw them."""
    model_calls = [
        {k: c.get(k) for k in ("id", "kind", "started", "ms_first_byte", "ms_last_byte", "ms_total", "status", "model_sent", "side", "stream")}
        for c in run.calls
    ]
    return {"model_calls": model_calls, "tool_calls": run.outcome.tool_spans}


def control_trajectory(facts: RunFacts, prompt: str, answer: str | None, started: datetime, finished: datetime) -> Trajectory:
    steps = [Step(step_id=1, source="user", message=prompt, timestamp=iso(started))]
    if answer is not None:
        # A control answers without a model: a deterministic step.
        steps.append(Step(step_id=2, source="agent", message=answer, timestamp=iso(finished), llm_call_count=0))
    return Trajectory(
        session_id=facts.job.name,
        agent=TrajectoryAgent(name=facts.participant, version=__version__),
        steps=steps,
        extra={"nullius_control": facts.control} if facts.control else None,
    )


def held_trajectory(facts: RunFacts, prompt: str, transcript: list[dict[str, str]], started: datetime, finished: datetime) -> Trajectory:
    """The conversation an upstream's own loop held (No agent · Original): setup's prompt, then each message it returned."""
    steps = [Step(step_id=1, source="user", message=prompt, timestamp=iso(started))]
    for number, message in enumerate(transcript, start=2):
        source = "agent" if message.get("role") in ("agent", "assistant") else "user"
        steps.append(Step(step_id=number, source=source, message=str(message.get("text", "")), timestamp=iso(finished)))
    return Trajectory(
        session_id=facts.job.name,
        agent=TrajectoryAgent(name=facts.participant, version=__version__),
        steps=steps,
        extra={"nullius_setup": facts.prepared.original.setup.record()} if facts.prepared.original is not None else None,
    )

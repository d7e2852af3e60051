"""A trial's token totals come from its relay's record, and the job's stats sum them."""

from __future__ import annotations

from nullius_core.jobs import stats
from nullius_core.relay.usage import agent_context

CALLS = [
    {"kind": "agent", "model_sent": "m", "status": 200, "usage": {"input": 100, "cached_input": 40, "output": 20, "reasoning": 5}, "served_by": "anthropic"},
    {"kind": "agent", "model_sent": "small", "side": True, "status": 200, "usage": {"input": 10, "output": 2}},
    {"kind": "agent", "model_sent": "m", "status": 429, "usage": {}},
    {"kind": "judge", "model_sent": "judge-model", "status": 200, "usage": {"input": 1000, "output": 1}},
]


def test_agent_tokens_leave_the_judge_out():
    context = agent_context(CALLS, provider="openrouter")
    assert (context["n_input_tokens"], context["n_cache_tokens"], context["n_output_tokens"]) == (110, 40, 22)
    assert context["model_usage"] == {
        "openrouter/m": {"n_input_tokens": 100, "n_cache_tokens": 40, "n_output_tokens": 20, "cost_usd": None},
        "openrouter/small": {"n_input_tokens": 10, "n_cache_tokens": 0, "n_output_tokens": 2, "cost_usd": None},
    }
    assert context["cost_usd"] is None  # recorded without a meter: no call's cost is known
    meta = context["metadata"]
    assert meta["calls"] == 3 and meta["side_calls"] == 1 and meta["reasoning_tokens"] == 5
    assert meta["statuses"] == {"200": 2, "429": 1} and meta["served_by"] == {"anthropic": 1} and meta["other_routes"] == {"judge": 1}
    assert agent_context([CALLS[3]]) is None


def test_job_stats_sum_the_trials_tokens():
    trials = [
        {"trial_name": f"u{i}", "task_name": f"u{i}", "source": "test", "agent_info": {"name": "a"},
         "agent_result": agent_context(CALLS), "verifier_result": {"rewards": {"reward": 1.0}}}
        for i in range(3)
    ]
    job = stats.job_stats(trials, 3)
    assert (job["n_input_tokens"], job["n_cache_tokens"], job["n_output_tokens"]) == (330, 120, 66)

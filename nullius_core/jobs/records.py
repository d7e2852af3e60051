"""The records of a job, in the shapes Harbor 0.25's models read.

`TrialResult`, `JobResult` and the ATIF `Trajectory` follow Harbor's pydantic
models field for field (Harbor ignores unknown keys in the first two, and
forbids them in a trajectory). Nullius's own facts go in a `standard` block
beside Harbor's fields, never inside the trajectory.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import attrs
import cattrs

from nullius_core.jobs.standard import TrialOwn, TrialStandard

ATIF_VERSION = "ATIF-v1.8"


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@attrs.frozen(kw_only=True)
class Timing:
    started_at: str | None = None
    finished_at: str | None = None


@attrs.frozen(kw_only=True)
class ExceptionInfo:
    exception_type: str
    exception_message: str
    exception_traceback: str
    occurred_at: str


@attrs.frozen(kw_only=True)
class ModelInfo:
    name: str
    provider: str | None = None


@attrs.frozen(kw_only=True)
class AgentInfo:
    name: str
    version: str
    core: str | None = None  # the core an adapter runs (upstream.core); Harbor's AgentInfo ignores a key it does not know
    model_info: ModelInfo | None = None


@attrs.frozen(kw_only=True)
class ModelUsage:
    n_input_tokens: int = 0
    n_cache_tokens: int = 0
    n_output_tokens: int = 0
    cost_usd: float | None = None


@attrs.frozen(kw_only=True)
class AgentContext:
    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    model_usage: dict[str, ModelUsage] | None = None
    metadata: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class VerifierResult:
    rewards: dict[str, float] | None = None


@attrs.frozen(kw_only=True)
class StepResult:
    """Harbor's StepResult: one step of a task of steps, its check's rewards or its failure, its turn's and check's times."""

    step_name: str
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    agent_execution: Timing | None = None
    verifier: Timing | None = None


@attrs.frozen(kw_only=True)
class TrialConfig:
    """Harbor's TrialConfig fields Nullius fills, and the run's own facts under `standard`."""

    task: dict[str, Any]
    trial_name: str
    trials_dir: str
    agent: dict[str, Any]
    environment: dict[str, Any]
    job_id: str
    standard: TrialStandard


@attrs.frozen(kw_only=True)
class TrialResult:
    id: str
    task_name: str
    trial_name: str
    trial_uri: str
    task_id: dict[str, Any]
    source: str
    task_checksum: str
    config: TrialConfig
    agent_info: AgentInfo
    agent_result: AgentContext | None = None
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    started_at: str | None = None
    finished_at: str | None = None
    environment_setup: Timing | None = None
    agent_setup: Timing | None = None
    agent_execution: Timing | None = None
    verifier: Timing | None = None
    step_results: list[StepResult] | None = None  # a task of steps: each step that ran, in turn
    standard: TrialOwn


@attrs.frozen(kw_only=True)
class Step:
    step_id: int
    source: str
    message: str
    timestamp: str | None = None
    model_name: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    observation: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    llm_call_count: int | None = None
    extra: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class TrajectoryAgent:
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class Trajectory:
    agent: TrajectoryAgent
    steps: list[Step]
    schema_version: str = ATIF_VERSION
    session_id: str | None = None
    notes: str | None = None
    final_metrics: dict[str, Any] | None = None
    extra: dict[str, Any] | None = None


_conv = cattrs.Converter()


# An unknown cost is written as null, never left out: a reader must not take a missing figure for none spent;
# nor a pin's `held` that cannot be told (relay/pins.py) for one that held.
KEEP_NULL = frozenset({"cost_usd", "as_served_usd", "first_run_usd", "held"})


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None or k in KEEP_NULL}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def dump(record: Any) -> dict[str, Any]:
    """A record as JSON data; empty optional fields are left out, as Harbor writes them."""
    return _drop_none(_conv.unstructure(record))


def load(data: dict[str, Any], cls: type) -> Any:
    return _conv.structure(data, cls)

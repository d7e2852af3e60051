"""Every way a trial can end but with a plain score, in one table: the run, result.json, the summary, prove and conform read it.

A kind's name is the `exception_type` of Harbor's `exception_info` (Harbor's
own names where it has one). Its row says where it comes from (the phase),
the trial's outcome when it has no score, whether the unit is scored anyway
(Harbor still verifies after an agent that timed out or exited), whether it
counts in the mean as a 0, and what runs it again.

Kinds outside the agent's doing (a rate limit, a refused key, a provider that
does not answer, a cancelled run) are left out of the mean and of pass^k and
counted apart: 2 passed and 1 rate-limited is a mean of 1.0 over 2, not 0.667.
Everything else the agent or the benchmark could have caused keeps Harbor's
rule, a missing reward counting as 0, and the summary names its kind.
"""

from __future__ import annotations

import enum
from pathlib import Path

import attrs


class Phase(str, enum.Enum):
    SETUP = "setup"  # the unit's place, its environment, the driver's setup
    AGENT = "agent"  # the agent's process and its protocol
    PROVIDER = "provider"  # the model provider, as the relay saw it
    VERIFIER = "verifier"  # the driver's score
    DRIVER = "driver"  # the driver's other ops (turn, oracle, a capability's)
    INFRASTRUCTURE = "infrastructure"  # Nullius or the machine
    RUN = "run"  # the run itself (cancelled)


class Rerun(str, enum.Enum):
    RESUME = "resume"  # `--resume` runs it again: it says nothing of the agent
    RETRY_ERRORS = "retry-errors"  # only `--resume --retry-errors`


@attrs.frozen
class Kind:
    name: str
    phase: Phase
    outcome: str  # the trial's outcome when it has no score
    scored: bool  # the unit is scored anyway, its failure recorded beside the reward
    in_mean: bool  # unscored, it counts 0 in the mean; False: left out and counted apart
    rerun: Rerun
    means: str
    harbor: str  # the cause Harbor's error policy (harbor/models/trial/error_policy.py) files the name under


def _kind(name: str, phase: Phase, means: str, *, outcome: str = "error", scored: bool = False, in_mean: bool = True,
          rerun: Rerun = Rerun.RETRY_ERRORS, harbor: str = "unclassified") -> Kind:
    return Kind(name=name, phase=phase, outcome=outcome, scored=scored, in_mean=in_mean, rerun=rerun, means=means, harbor=harbor)


_OUTSIDE = {"in_mean": False, "rerun": Rerun.RESUME}

KINDS: dict[str, Kind] = {k.name: k for k in (
    _kind("EnvironmentSetupError", Phase.SETUP, "the driver's setup failed, or the unit's place or environment could not be made"),
    _kind("EnvironmentSecretMissingError", Phase.SETUP, "a licence the unit's environment needs is not set"),
    _kind("SandboxBuildFailedError", Phase.SETUP, "the task's own image did not build (its output is the job's .work/own-*.log)",
          harbor="sandbox_failed"),
    _kind("HealthcheckError", Phase.SETUP, "the task's healthcheck did not pass before the agent was to start", harbor="sandbox_failed"),
    _kind("AgentSetupTimeoutError", Phase.AGENT, "the agent did not answer initialize or session/new in time",
          harbor="sandbox_failed"),
    _kind("AgentTimeoutError", Phase.AGENT, "the agent's turn took longer than its limit: cancelled, then scored", scored=True,
          harbor="agent_exhausted_budget"),
    _kind("NonZeroAgentExitCodeError", Phase.AGENT, "the agent exited with a non-zero status: scored as it left the unit", scored=True),
    _kind("AgentExitedError", Phase.AGENT, "the agent exited before it answered: scored as it left the unit", scored=True),
    _kind("ContextWindowExceededError", Phase.AGENT, "the model's context window refused the agent's last call: scored as it left the unit",
          scored=True, harbor="agent_exhausted_budget"),
    _kind("OutputLengthExceededError", Phase.AGENT, "the agent's last reply hit the output limit with neither text nor a tool call: "
          "scored as it left the unit", scored=True, harbor="agent_exhausted_budget"),
    _kind("AgentProtocolError", Phase.AGENT, "the agent broke its protocol (ACP)"),
    _kind("AgentError", Phase.AGENT, "the agent's session failed"),
    _kind("AnswererError", Phase.AGENT, "the upstream's own answerer (the driver's answer op, No agent · Original) failed"),
    _kind("ApiRateLimitError", Phase.PROVIDER, "the provider refused the agent's last call for its rate (429)", outcome="rate_limited",
          harbor="model_provider_failed", **_OUTSIDE),
    _kind("AgentAuthenticationError", Phase.PROVIDER, "the provider refused the key (401 or 403)", harbor="model_provider_failed", **_OUTSIDE),
    _kind("ApiConnectionError", Phase.PROVIDER, "the relay could not reach the provider (connection refused, no such host: 502)",
          harbor="model_provider_failed", **_OUTSIDE),
    _kind("ApiInternalServerError", Phase.PROVIDER, "the provider failed the call (500, 501, 503, 504): its side, "
          "not the agent's, as a 502 is", harbor="model_provider_failed", **_OUTSIDE),
    _kind("ApiOverloadedError", Phase.PROVIDER, "the provider said it is overloaded (529)", harbor="model_provider_failed", **_OUTSIDE),
    _kind("ApiProviderResourceNotFoundError", Phase.PROVIDER, "the provider answered 404: a base URL (without /v1?) or a model it does not serve",
          harbor="model_provider_failed", **_OUTSIDE),
    _kind("ApiProviderRouteError", Phase.PROVIDER, "the provider had no endpoint its serving pin allows for the call (--served-by, "
          "a definition's pin: 404)", harbor="model_provider_failed", **_OUTSIDE),
    _kind("ApiError", Phase.PROVIDER, "the provider answered the last call 200 with an error in it (a failed Responses object, say)",
          harbor="model_provider_failed", **_OUTSIDE),
    _kind("VerifierError", Phase.VERIFIER, "the driver's score failed or replied without a reward"),
    _kind("VerifierTimeoutError", Phase.VERIFIER, "the driver's score, or the task's check, did not end in time", harbor="verifier_failed"),
    _kind("RewardFileNotFoundError", Phase.VERIFIER, "the task's check wrote neither reward.txt nor reward.json", harbor="verifier_failed"),
    _kind("RewardFileEmptyError", Phase.VERIFIER, "the task's check wrote an empty reward file", harbor="verifier_failed"),
    _kind("VerifierOutputParseError", Phase.VERIFIER, "the task's reward file is not a finite number (reward.txt) or an object of them "
          "(reward.json)", harbor="verifier_failed"),
    _kind("ScoreHeld", Phase.VERIFIER, "the run held the unit's score for later (--hold-score): its answer and workspace are kept "
          "(verifier/held.json), and `nullius score JOB` scores it", outcome="held", in_mean=False),
    _kind("OracleError", Phase.DRIVER, "the driver's oracle failed"),
    _kind("DriverTurnError", Phase.DRIVER, "the driver's turn failed"),
    _kind("ProduceError", Phase.DRIVER, "the capability benchmark's produce failed"),
    _kind("CapabilityError", Phase.DRIVER, "the capability's driver failed"),
    _kind("NodeLostError", Phase.INFRASTRUCTURE, "the cluster's node that ran the unit's agent was lost while it ran (the ray "
          "backend): what it did there is gone; `--resume` runs it again", **_OUTSIDE),
    _kind("CauseUnknownError", Phase.INFRASTRUCTURE, "Nullius itself failed on this unit (its traceback is in exception.txt)"),
    _kind("ReplayDiverged", Phase.RUN, "a replay (nullius replay) met a call whose request differs from the recorded one: the unit "
          "ends there, unscored; its result.json says which call and which fields", outcome="diverged", **_OUTSIDE),
    _kind("CancelledError", Phase.RUN, "the run was cancelled while this trial ran", outcome="cancelled", harbor="cancelled",
          **_OUTSIDE),
)}

UNKNOWN = _kind("", Phase.INFRASTRUCTURE, "a kind this table does not name")

# The relay's status of an agent's last model call, when it says why the agent stopped.
CALL_FAILURES: dict[int, str] = {
    429: "ApiRateLimitError",
    401: "AgentAuthenticationError",
    403: "AgentAuthenticationError",
    404: "ApiProviderResourceNotFoundError",
    500: "ApiInternalServerError",
    501: "ApiInternalServerError",
    502: "ApiConnectionError",
    503: "ApiInternalServerError",
    504: "ApiInternalServerError",
    529: "ApiOverloadedError",
}

def call_failure(call: dict) -> str | None:
    """The kind a model call's failure names, by its status (CALL_FAILURES); a pinned call's 404 is its route's refusal."""
    status = call.get("status")
    if status == 404 and call.get("routing_sent"):
        return "ApiProviderRouteError"
    return CALL_FAILURES.get(status) if isinstance(status, int) else None


# A trial's outcome: whether it counts in the mean (an errored one: as its kind says).
OUTCOMES: dict[str, str] = {
    "passed": "scored, and the benchmark says it passed",
    "failed": "scored, and the benchmark says it failed",
    "scored": "scored (a benchmark whose reward is a number, not a pass)",
    "error": "not scored: its kind (exception_type) says why",
    "rate_limited": "not scored: the provider's rate limit, outside the agent's doing",
    "cancelled": "not scored: the run was cancelled while it ran",
    "diverged": "not scored: a replay met a request that differs from the recorded one (nullius replay)",
    "held": "not scored yet: the run held its score for later (--hold-score; `nullius score JOB` scores it)",
}


def kind_of(name: str | None) -> Kind | None:
    """The row of an exception_type (None for none); a name no row has reads as UNKNOWN under its own name."""
    if name is None:
        return None
    return KINDS.get(name) or attrs.evolve(UNKNOWN, name=name)


def in_mean(result: dict) -> bool:
    """Whether a trial's result.json counts in the mean (and pass^k): a score does; an error as its kind says."""
    exception = result.get("exception_info")
    rewards = (result.get("verifier_result") or {}).get("rewards")
    if exception is None or rewards is not None:
        return True
    kind = kind_of(exception.get("exception_type"))
    return kind is None or kind.in_mean


def stands_on_resume(result: dict, retry_errors: bool) -> bool:
    """Whether a trial's result stands when its job is resumed, or the trial runs again."""
    exception = result.get("exception_info")
    if exception is None:
        return True
    kind = kind_of(exception.get("exception_type"))
    return kind is None or (kind.rerun is Rerun.RETRY_ERRORS and not retry_errors)


def resume_command(job: Path | str, errors: dict[str, int] | None) -> str:
    """What finishes a job: `--resume`, with `--retry-errors` when an error it holds runs again only with it."""
    again = any((kind_of(name) or UNKNOWN).rerun is Rerun.RETRY_ERRORS for name in errors or {})
    return f"nullius run --resume {job}" + (" --retry-errors" if again else "")


def outside_the_agent(name: str | None) -> bool:
    """A kind the provider or the run caused: it proves nothing of the agent (conform and prove refuse on it)."""
    kind = kind_of(name)
    return kind is not None and kind.phase in (Phase.PROVIDER, Phase.RUN)


_NOT_THE_AGENTS = (Phase.SETUP, Phase.DRIVER, Phase.INFRASTRUCTURE, Phase.PROVIDER)


def final_state(summary: dict, state: str, reason: str | None) -> tuple[str, str | None]:
    """A run's last state: as it ended, but `failed` when every trial errored, unscored, for a reason not the agent's."""
    if state != "finished" or not summary.get("trials"):
        return state, reason
    errors: dict[str, int] = summary.get("errors") or {}
    scored = sum(summary.get(k, 0) for k in ("passed", "failed", "scored"))
    kinds = [kind_of(name) for name in errors]
    if scored or sum(errors.values()) != summary["trials"] or any(k is None or k.phase not in _NOT_THE_AGENTS for k in kinds):
        return state, reason
    named = ", ".join(f"{name} x{n} ({kind_of(name).phase.value})" for name, n in errors.items())  # type: ignore[union-attr]
    return "failed", f"every unit errored for a reason not the agent's: {named}"

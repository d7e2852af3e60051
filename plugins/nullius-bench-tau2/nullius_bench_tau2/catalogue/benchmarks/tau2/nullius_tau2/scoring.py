"""`score`: tau2's own evaluation of the simulation the loop returned.

run_task evaluates its simulation as it returns (evaluation type ALL, as
`tau2 run` does): the environment's end state (DB hash, env assertions),
the expected actions and the communicated info, combined as each task's
reward basis says. That reward is the unit's. With the option
`evaluation` set to one of tau2's NL-assertion types, the same simulation
is evaluated again by tau2.evaluator.evaluator.evaluate_simulation with that
type, whose judge (tau2's NLAssertionsEvaluator: litellm, model
config.DEFAULT_LLM_NL_ASSERTIONS) is pointed at the unit's judge route.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

from tau2.data_model.simulation import RewardInfo, SimulationRun, TerminationReason
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.metrics.agent_metrics import is_successful
from tau2.utils.utils import get_now

from .runs import Endpoint

_judge_lock = threading.Lock()


class ScoreError(Exception):
    """The unit cannot be scored; the message says why (the unit's VerifierError)."""


def failed_run(task: Any, attempt: int, reason: str) -> SimulationRun:
    """The record tau2's runner keeps of a conversation that failed (run_tasks' skip_failed_samples): reward 0."""
    now = get_now()
    return SimulationRun(id=f"{task.id}_{attempt - 1}_failed", task_id=task.id, start_time=now, end_time=now,
                         duration=0.0, termination_reason=TerminationReason.AGENT_ERROR, messages=[],
                         trial=attempt - 1, reward_info=RewardInfo(reward=0.0, info={"note": reason}))


def evaluate(domain: str, task: Any, simulation: SimulationRun, evaluation: EvaluationType,
             judge: Optional[Endpoint], judge_seconds: float) -> RewardInfo:
    """The simulation's reward: run_task's own for ALL, else tau2's evaluation of that type, judged at `judge`."""
    if evaluation == EvaluationType.ALL and simulation.reward_info is not None:
        return simulation.reward_info
    if judge is None:
        raise ScoreError(f"score: judge: evaluation {evaluation.value} asks tau2's NL-assertion judge, "
                         "and the request has no judge {model, base_url, key} (the unit's judge route)")
    return _judged(lambda: evaluate_simulation(simulation=simulation, task=task, evaluation_type=evaluation,
                                               solo_mode=False, domain=domain), judge, judge_seconds)


def _judged(evaluation, judge: Endpoint, seconds: float) -> RewardInfo:
    """Run an evaluation that calls the judge, with litellm pointed at the judge's route, for `seconds` at most."""
    done: dict = {}

    def work() -> None:
        try:
            done["reward"] = evaluation()
        except Exception as exc:  # the judge's failure is the unit's, said in the reply
            done["error"] = exc

    # tau2's NL judge passes litellm no base or key: litellm then reads OpenAI's variables, set here alone
    with _judge_lock:
        saved = {name: os.environ.get(name) for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = judge.base_url, judge.key
        try:
            worker = threading.Thread(target=work, name="tau2-judge", daemon=True)
            worker.start()
            worker.join(seconds)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    if worker.is_alive():
        raise ScoreError(f"score: tau2's NL-assertion judge did not answer within {seconds:g} s "
                         "(option judge_seconds)")
    if "error" in done:
        exc = done["error"]
        raise ScoreError(f"score: tau2's NL-assertion judge failed: {type(exc).__name__}: {exc}")
    return done["reward"]


def reply(task: Any, simulation: SimulationRun, reward_info: RewardInfo, evaluation: EvaluationType) -> dict:
    """The score op's reply: tau2's reward, pass as tau2's metrics count it, and what the evaluation found."""
    reward = float(reward_info.reward)
    info = reward_info.model_dump(mode="json", exclude_none=True)
    detail = {
        "task_id": task.id,
        "termination_reason": _value(simulation.termination_reason),
        "evaluation": evaluation.value,
        "reward_basis": [_value(b) for b in task.evaluation_criteria.reward_basis] if task.evaluation_criteria else [],
        "messages": len(simulation.messages),
        **{k: info[k] for k in ("reward_breakdown", "db_check", "env_assertions", "action_checks",
                                "communicate_checks", "nl_assertions", "info") if k in info},
    }
    return {"reward": reward, "passed": bool(is_successful(reward)), "detail": detail}


def _value(item: Any) -> Any:
    return getattr(item, "value", item)

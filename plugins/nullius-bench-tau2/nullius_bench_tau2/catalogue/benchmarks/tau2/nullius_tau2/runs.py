"""How the driver calls tau2's builder and runner: tau2.run.run_task, with `tau2 run`'s defaults.

`tau2 run` (tau2.cli -> run_domain -> run_tasks -> run_task) fixes these
when its flags are left alone (tau2.config and RunConfig): max_steps 200,
max_errors 10, temperature 0.0 for the agent and the user, max_retries 3
(run_domain adds it to both LLMs' arguments as num_retries), seed 300 from
which run_tasks draws one seed per trial, the `base` task split, no
repetition judge, evaluation type ALL. The driver passes the same values
to run_task; the models and where they are served are the run's.
"""

from __future__ import annotations

import random
from typing import Any, Optional

import attrs
from tau2.config import (
    DEFAULT_LLM_TEMPERATURE_AGENT,
    DEFAULT_LLM_TEMPERATURE_USER,
    DEFAULT_MAX_ERRORS,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_STEPS,
    DEFAULT_SEED,
)
from tau2.evaluator.evaluator import EvaluationType


@attrs.frozen
class Endpoint:
    """An OpenAI-compatible endpoint as the core hands it over: a unit's route on its relay."""

    model: str
    base_url: str
    key: str

    def litellm(self, temperature: float) -> tuple[str, dict]:
        """The model and arguments tau2 passes to litellm: OpenAI's wire format, at this route."""
        # "openai/" makes litellm speak Chat Completions whatever the model's name says
        return f"openai/{self.model}", {"temperature": temperature, "api_base": self.base_url,
                                        "api_key": self.key, "num_retries": DEFAULT_MAX_RETRIES}


def trial_seed(attempt: int) -> int:
    """The seed tau2's run_tasks gives trial `attempt` (from 1): random.seed(300), then one randint per trial."""
    draw = random.Random(DEFAULT_SEED)
    seeds = [draw.randint(0, 1000000) for _ in range(attempt)]
    return seeds[attempt - 1]


def run_conversation(domain: str, task: Any, simulator: Endpoint, attempt: int,
                     agent: str = "nullius_acp", answerer: Optional[Endpoint] = None,
                     evaluation: EvaluationType = EvaluationType.ALL) -> Any:
    """tau2's run_task with tau2 run's defaults: `agent` against tau2's own user simulator."""
    from tau2.run import run_task

    llm_user, llm_args_user = simulator.litellm(DEFAULT_LLM_TEMPERATURE_USER)
    if answerer is not None:
        llm_agent, llm_args_agent = answerer.litellm(DEFAULT_LLM_TEMPERATURE_AGENT)
    else:
        llm_agent, llm_args_agent = "nullius/acp-agent", {}
    return run_task(domain=domain, task=task, agent=agent, user="user_simulator",
                    llm_agent=llm_agent, llm_args_agent=llm_args_agent,
                    llm_user=llm_user, llm_args_user=llm_args_user,
                    max_steps=DEFAULT_MAX_STEPS, max_errors=DEFAULT_MAX_ERRORS,
                    evaluation_type=evaluation, seed=trial_seed(attempt))


def run_control(domain: str, task: Any, control: str) -> Any:
    """The oracle's or nop's conversation through tau2's same loop: scripted participants, no model, no seed."""
    from tau2.run import run_task

    return run_task(domain=domain, task=task, agent=f"nullius_{control}", user=f"nullius_{control}_user",
                    max_steps=DEFAULT_MAX_STEPS, max_errors=DEFAULT_MAX_ERRORS,
                    evaluation_type=EvaluationType.ALL, seed=None)

"""The participants Nullius adds to tau2, registered where tau2 registers its own (tau2.registry.registry).

tau2's builder (tau2.run.run_task) makes the agent and the user itself, from
the registry's class and fixed arguments, so what an instance needs beyond
them (the conversation it bridges, the task's script) it finds on the thread
that runs the loop: `Seat`, set by the driver before it calls run_task there.

- `nullius_acp`: the ACP agent under test. Each message tau2 sends it goes to
  the conversation; what comes back (a tool call through the MCP server, or
  the final message of the agent's turn) is its reply.
- `nullius_oracle` with the user `nullius_oracle_user`: each task's expected
  actions replayed through tau2's environment, the assistant's by the agent,
  the user's (telecom's device actions) by the user, then the task's
  communicate_info said and the conversation stopped.
- `nullius_nop` with the user `nullius_nop_user`: the user ends the
  conversation at once; no agent ever speaks (a control never asks the
  simulator).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Optional

from tau2.agent.base import AgentError
from tau2.agent.llm_agent import LLMAgent
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.registry import registry
from tau2.user.base import STOP
from tau2.user.user_simulator import UserSimulator

_seats = threading.local()


class Seat:
    """What the loop thread's participants need: the conversation (`nullius_acp`) or the script (the controls)."""

    def __init__(self, bridge: Any = None, script: "Script | None" = None) -> None:
        self.bridge = bridge
        self.script = script

    def take(self) -> None:
        _seats.seat = self

    @staticmethod
    def here() -> "Seat":
        seat = getattr(_seats, "seat", None)
        if seat is None:
            raise RuntimeError("a Nullius participant was built outside the driver's loop thread")
        return seat


class AcpAgent(LLMAgent):
    """The agent under test, as tau2 sees it: an LLMAgent whose replies come from the ACP agent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bridge = Seat.here().bridge

    def generate_next_message(self, message, state):
        reply = self.bridge.agent_turn(message)
        # tau2's LLMAgent keeps its messages in its state; the ACP agent keeps its own session
        state.messages.append(message)
        state.messages.append(reply)
        return reply, state

    def set_seed(self, seed: int) -> None:
        # the agent under test samples as it does; the seed still reaches tau2's user simulator
        self.llm_args["seed"] = seed


class Script:
    """A task's expected actions in order, the assistant's and the user's, and what the agent says at the end."""

    def __init__(self, task: Any) -> None:
        criteria = task.evaluation_criteria
        self.actions = list(criteria.actions or []) if criteria is not None else []
        self.position = 0
        info = list(criteria.communicate_info or []) if criteria is not None else []
        self.final = ("Here is what you asked for: " + "; ".join(info) + ".") if info else \
            "Everything you asked for is done. Is there anything else?"
        self.said_final = False
        self.ids = itertools.count()

    def next_for(self, requestor: str) -> Optional[ToolCall]:
        if self.position < len(self.actions) and self.actions[self.position].requestor == requestor:
            action = self.actions[self.position]
            self.position += 1
            return ToolCall(id=f"oracle-{next(self.ids)}", name=action.name, arguments=dict(action.arguments),
                            requestor=requestor)
        return None

    @property
    def done(self) -> bool:
        return self.position >= len(self.actions)


class OracleAgent(LLMAgent):
    """Makes the assistant's expected actions; hands over to the user for theirs; says communicate_info last."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.script = Seat.here().script

    def generate_next_message(self, message, state):
        call = self.script.next_for("assistant")
        if call is not None:
            reply = AssistantMessage(role="assistant", tool_calls=[call], cost=0.0)
        elif not self.script.done:
            reply = AssistantMessage(role="assistant", content="Please do the next steps on your side.", cost=0.0)
        else:
            self.script.said_final = True
            reply = AssistantMessage(role="assistant", content=self.script.final, cost=0.0)
        return reply, state


class OracleUser(UserSimulator):
    """Makes the user's expected actions when it is their turn; stops once the agent has said its last."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.script = Seat.here().script

    def generate_next_message(self, message, state):
        if self.script.said_final:
            return UserMessage(role="user", content=STOP, cost=0.0), state
        call = self.script.next_for("user")
        if call is not None:
            return UserMessage(role="user", tool_calls=[call], cost=0.0), state
        return UserMessage(role="user", content="Please go on.", cost=0.0), state

    def set_seed(self, seed: int) -> None:
        pass


class NopUser(UserSimulator):
    """Ends the conversation before any agent speaks."""

    def generate_next_message(self, message, state):
        return UserMessage(role="user", content=STOP, cost=0.0), state

    def set_seed(self, seed: int) -> None:
        pass


class NopAgent(LLMAgent):
    """Never asked: the nop user stops first. Asked all the same, it is an agent error, never an answer."""

    def generate_next_message(self, message, state):
        raise AgentError("the nop control's agent was asked to speak")


def register() -> None:
    """Register once per process, as tau2 registers its own participants."""
    known = registry.get_agents()
    for name, cls in {"nullius_acp": AcpAgent, "nullius_oracle": OracleAgent, "nullius_nop": NopAgent}.items():
        if name not in known:
            registry.register_agent(cls, name)
    users = registry.get_users()
    for name, cls in {"nullius_oracle_user": OracleUser, "nullius_nop_user": NopUser}.items():
        if name not in users:
            registry.register_user(cls, name)

"""One unit's conversation: tau2's own loop in a thread of the driver, the ACP agent as tau2's agent.

The loop (tau2.run.run_task: tau2's builder and runner at tau2 run's
defaults) asks its agent for a message each time the user or the environment
has spoken; `AcpAgent` hands that message here and waits. The driver answers
from outside the thread:

- a tool call (the MCP server's tools/call) becomes the agent's message to
  the loop; the loop executes it in tau2's environment, and the tool message
  it sends back to the agent is the call's result;
- the final message of the agent's turn (`turn`'s transcript) becomes the
  agent's message to the user; what the loop sends back is the user's next
  message, or the end of the conversation.

Only one of them at a time: the loop has one agent, who says one thing at a
time. Nothing reaches the loop after it ended (a call then is an error, never
made).
"""

from __future__ import annotations

import itertools
import queue
import threading
import traceback
from typing import Any, Callable, Optional

import attrs
from tau2.agent.base import AgentError
from tau2.data_model.message import AssistantMessage, MultiToolMessage, ToolCall, ToolMessage, UserMessage

from .agents import Seat

ENDED = object()  # the loop's last word: it has returned or raised


@attrs.frozen
class Said:
    """The agent's next message to the loop, or the order to stop (`cut`)."""

    message: Optional[AssistantMessage] = None
    cut: str = ""


@attrs.frozen
class Outcome:
    """What the loop came to: a simulation, or the failure and whose it was."""

    simulation: Any = None
    failure: str = ""
    blame: str = ""  # "agent" (tau2's agent error: scored 0) or "loop" (the user simulator, tau2: the unit's error)


class ConversationError(Exception):
    """The conversation cannot take that now; the message says why."""


class Conversation:
    """tau2's loop for one unit, held open between the driver's ops."""

    def __init__(self, run: Callable[[], Any], wait_seconds: float) -> None:
        self._run = run
        self.wait_seconds = wait_seconds
        self._to_agent: queue.Queue = queue.Queue()
        self._from_agent: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self.waiting = False  # the loop waits for the agent's next message
        self.ended = False
        self.outcome: Optional[Outcome] = None
        self._agent_failure = ""
        self.thread = threading.Thread(target=self._loop, name="tau2-loop", daemon=True)

    # -- the loop's side (its thread) --------------------------------------------

    def _loop(self) -> None:
        Seat(bridge=self).take()
        try:
            self.outcome = Outcome(simulation=self._run())
        except Exception as exc:  # the loop's own exceptions end it: they are recorded, never lost
            if self._agent_failure:
                self.outcome = Outcome(failure=self._agent_failure, blame="agent")
            else:
                where = "tau2's user simulator" if _in_user_simulator(exc) else "tau2's loop"
                self.outcome = Outcome(failure=f"{where} failed: {type(exc).__name__}: {exc}", blame="loop")
        finally:
            self._to_agent.put(ENDED)

    def agent_turn(self, message: Any) -> AssistantMessage:
        """AcpAgent's generate_next_message: hand the loop's message over, wait for the agent's."""
        self._to_agent.put(message)
        said: Said = self._from_agent.get()
        if said.cut:
            self._agent_failure = said.cut
            raise AgentError(said.cut)
        return said.message

    # -- the driver's side ---------------------------------------------------------

    def start(self) -> Any:
        """Start the loop; the first thing it sends the agent (the user's first message), or ENDED."""
        with self._lock:
            self.thread.start()
            return self._next()

    def say(self, text: str) -> Any:
        """The agent's final message of its turn, to the user; the loop's next message to the agent, or ENDED."""
        message = AssistantMessage(role="assistant", content=text, cost=0.0)
        try:
            message.validate()
        except ValueError:
            return self.cut("the agent's turn ended without a message to the user: tau2's agent must say something")
        return self._send(message)

    def call(self, name: str, arguments: dict) -> Any:
        """A tool call of the agent's; tau2's ToolMessage in answer, or ENDED."""
        call = ToolCall(id=f"call-{next(self._ids)}", name=name, arguments=arguments, requestor="assistant")
        return self._send(AssistantMessage(role="assistant", tool_calls=[call], cost=0.0))

    def cut(self, reason: str) -> Any:
        """End a conversation the agent can no longer carry on: tau2 records it as its agent's error."""
        with self._lock:
            if self.waiting:
                self.waiting = False
                self._from_agent.put(Said(cut=reason))
                return self._drain()
            return ENDED

    def _send(self, message: AssistantMessage) -> Any:
        with self._lock:
            if self.ended:
                raise ConversationError("the conversation is over: tau2's loop takes nothing more")
            if not self.waiting:
                raise ConversationError("tau2's loop is not waiting for the agent")
            self.waiting = False
            self._from_agent.put(Said(message=message))
            return self._next()

    def _next(self) -> Any:
        try:
            got = self._to_agent.get(timeout=self.wait_seconds)
        except queue.Empty:
            raise ConversationError(f"tau2's loop said nothing within {self.wait_seconds:g} s "
                                    "(its user simulator did not answer)") from None
        if got is ENDED:
            self.ended = True
            self.thread.join()
        else:
            self.waiting = True
        return got

    def _drain(self) -> Any:
        got = self._next()
        while got is not ENDED:  # a loop told to stop raises at once; anything else it says is dropped
            self.waiting = False
            self._from_agent.put(Said(cut="the conversation was cut"))
            got = self._next()
        return got


def user_text(message: Any) -> str:
    """The text of what the loop sent the agent: a user message, or a tool's result."""
    if isinstance(message, UserMessage):
        return message.content or ""
    if isinstance(message, ToolMessage):
        return message.content or ""
    if isinstance(message, MultiToolMessage):
        return "\n".join(m.content or "" for m in message.tool_messages)
    raise TypeError(f"unexpected message from tau2's loop: {type(message).__name__}")


def _in_user_simulator(exc: BaseException) -> bool:
    return any("user_simulator" in frame.filename or "/user/" in frame.filename
               for frame in traceback.extract_tb(exc.__traceback__))

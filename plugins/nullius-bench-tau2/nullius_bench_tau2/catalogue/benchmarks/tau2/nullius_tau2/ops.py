"""The driver's ops: units, setup, turn, answer, oracle, score. One unit at a time, as Nullius drives it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from tau2.agent.llm_agent import LLMAgent
from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
from tau2.registry import registry

from . import fields
from .agents import Script, Seat
from .conversation import ENDED, Conversation, ConversationError, user_text
from .data import DATASETS, Tasks, standard
from .fields import OpError
from .runs import run_control, run_conversation
from .scoring import ScoreError, evaluate, failed_run, reply
from .tools import ToolSocket, mcp_tools

SERVER = "tau2"  # standard.json's mcp_servers entry
SIMULATOR = "the unit's simulator route, an OpenAI-compatible endpoint for tau2's user simulator"


class Unit:
    """The unit being served: its task, its conversation, and what is to be scored."""

    def __init__(self, name: str, task: Any, attempt: int) -> None:
        self.name, self.task, self.attempt = name, task, attempt
        self.conversation: Optional[Conversation] = None
        self.record: Any = None  # the SimulationRun score evaluates, once there is one


class Driver:
    def __init__(self) -> None:
        self.definition = standard()
        self.tasks: dict[str, Tasks] = {}
        self.domains: dict[str, tuple[str, list]] = {}  # domain -> (the agent's prompt, its MCP tools)
        self.unit: Optional[Unit] = None
        self.tools: Optional[ToolSocket] = None
        self.evaluation = fields.option_evaluation()
        self.judge_seconds = fields.option_seconds("judge_seconds", 100.0)
        self.simulator_seconds = fields.option_seconds("simulator_seconds", 540.0)

    # -- lookups ---------------------------------------------------------------------

    def dataset(self, request: dict, op: str) -> Tasks:
        name = fields.text(request, op, "dataset", self.definition.get("dataset", "airline"))
        if name not in self.tasks:
            self.tasks[name] = Tasks.load(name)
        return self.tasks[name]

    def domain(self, domain: str) -> tuple[str, list]:
        """The ACP agent's prompt and the MCP tools, from tau2's own environment and LLMAgent."""
        if domain not in self.domains:
            environment = registry.get_env_constructor(domain)()
            system = LLMAgent(tools=[], domain_policy=environment.get_policy()).system_prompt
            prompt = (f"{system}\n\nThe tools are those of the MCP server {domain!r}. Each message that ends "
                      "your turn goes to the user as it is, and the user's answer is your next prompt.\n\n"
                      f"You have greeted the user: {DEFAULT_FIRST_AGENT_MESSAGE.content!r}. "
                      "The user's first message follows.")
            self.domains[domain] = (prompt, mcp_tools(environment))
        return self.domains[domain]

    def current(self, request: dict, op: str) -> Unit:
        name = fields.text(request, op, "unit")
        if self.unit is None or self.unit.name != name:
            raise OpError(f"{op}: unit: {name!r} is not the unit set up last: setup comes first")
        return self.unit

    # -- ops -------------------------------------------------------------------------

    def units(self, request: dict) -> dict:
        return {"units": list(self.dataset(request, "units").by_unit)}

    def setup(self, request: dict) -> dict:
        tasks = self.dataset(request, "setup")
        name = fields.text(request, "setup", "unit")
        task, attempt = tasks.task(name), fields.attempt(request, "setup")
        self.drop()
        self.unit = Unit(name, task, attempt)
        domain = tasks.dataset.domain
        prompt, tools = self.domain(domain)
        if self.tools is None:
            self.tools = ToolSocket()
        token = self.tools.open_unit(tools, self.on_call)
        # TAU2_TICKET, not ..._TOKEN: a name that looks like a secret is one the core may strip on the way
        env = {"TAU2_AT": self.tools.path, "TAU2_TICKET": token, "TAU2_DOMAIN": domain}
        return {"prompt": prompt, "mcp": [{"name": domain, "server": SERVER, "env": env}]}

    def turn(self, request: dict) -> dict:
        unit = self.current(request, "turn")
        said = fields.transcript(request, "turn")
        if not said:  # the conversation opens: tau2's loop starts, and its user speaks first
            simulator = fields.required_endpoint(request, "turn", "simulator", SIMULATOR)
            self.drop_conversation(unit)
            domain = self.tasks_of(request, "turn").dataset.domain
            unit.conversation = Conversation(
                lambda: run_conversation(domain, unit.task, simulator, unit.attempt), self.simulator_seconds)
            return self.next_words(unit.conversation.start())
        if said[-1]["role"] != "agent":
            raise OpError(f"turn: transcript[{len(said) - 1}].role: expected 'agent' (the turn's reply), "
                          f"found {said[-1]['role']!r}")
        conversation = unit.conversation
        if conversation is None:
            raise OpError("turn: the conversation has not opened: its first turn has an empty transcript")
        if conversation.ended:
            return self.next_words(ENDED, conversation)
        try:
            return self.next_words(conversation.say(said[-1]["text"]), conversation)
        except ConversationError as exc:
            raise OpError(f"turn: {exc}") from None

    def next_words(self, got: Any, conversation: Optional[Conversation] = None) -> dict:
        conversation = conversation or self.unit.conversation
        if got is not ENDED:
            return {"message": user_text(got)}
        outcome = conversation.outcome
        if outcome is not None and outcome.blame == "loop":
            raise OpError(f"turn: {outcome.failure}")
        return {"done": True}

    def on_call(self, name: str, arguments: dict) -> tuple[str, bool]:
        """A tools/call from the MCP server: the agent's next message to tau2's loop."""
        unit = self.unit
        if unit is None or unit.conversation is None:
            return "the user has not spoken yet: there is no conversation to act in", True
        try:
            got = unit.conversation.call(name, arguments)
        except ConversationError as exc:
            return str(exc), True
        if got is ENDED:
            return "the conversation is over: tau2's loop ended it and executed nothing", True
        if isinstance(got, ToolMessage):
            return got.content or "", bool(got.error)
        return user_text(got), False

    def oracle(self, request: dict) -> dict:
        unit = self.current(request, "oracle")
        script = Script(unit.task)
        Seat(script=script).take()
        unit.record = run_control(self.tasks_of(request, "oracle").dataset.domain, unit.task, "oracle")
        return {"answer": script.final}

    def answer(self, request: dict) -> dict:
        """The Original setup: tau2's own LLMAgent answers, through the unit's relay, against the user simulator."""
        unit = self.current(request, "answer")
        answerer = fields.endpoint_of(request, "answer", "", "the unit's route for tau2's own agent")
        simulator = fields.required_endpoint(request, "answer", "simulator", SIMULATOR)
        domain = self.tasks_of(request, "answer").dataset.domain
        try:
            unit.record = run_conversation(domain, unit.task, simulator, unit.attempt,
                                           agent="llm_agent", answerer=answerer)
        except Exception as exc:  # the answerer's or the simulator's failure is the unit's, said in the reply
            raise OpError(f"answer: tau2's loop failed: {type(exc).__name__}: {exc}") from None
        said = [_entry(m) for m in unit.record.messages if isinstance(m, (UserMessage, AssistantMessage))
                and m.has_text_content()]
        last = next((e["text"] for e in reversed(said) if e["role"] == "agent"), "")
        return {"answer": last, "transcript": said}

    def score(self, request: dict) -> dict:
        unit = self.current(request, "score")
        domain = self.tasks_of(request, "score").dataset.domain
        if unit.record is None:
            unit.record = self.record_of(unit, fields.text(request, "score", "answer", ""), domain)
        judge = fields.endpoint(request, "score", "judge", "the unit's judge route")
        try:
            reward_info = evaluate(domain, unit.task, unit.record, self.evaluation, judge, self.judge_seconds)
        except ScoreError as exc:
            raise OpError(str(exc)) from None
        _keep(request.get("verifier"), unit.record)
        return reply(unit.task, unit.record, reward_info, self.evaluation)

    def record_of(self, unit: Unit, answer: str, domain: str) -> Any:
        """The simulation to score: the conversation's, or nop's when no conversation was held."""
        conversation = unit.conversation
        if conversation is None:
            if answer:
                raise OpError("score: the agent answered, but tau2's loop never ran: a conversation opens "
                              "with a turn on an empty transcript")
            Seat(script=Script(unit.task)).take()
            return run_control(domain, unit.task, "nop")
        if not conversation.ended:
            conversation.cut("the conversation was cut before its end: the agent's turn never ended in a message")
        outcome = conversation.outcome
        if outcome is None:
            raise OpError("score: tau2's loop has not ended (its user simulator has not answered)")
        if outcome.simulation is not None:
            return outcome.simulation
        if outcome.blame == "agent":
            return failed_run(unit.task, unit.attempt, outcome.failure)
        raise OpError(f"score: {outcome.failure}")

    # -- housekeeping ----------------------------------------------------------------

    def tasks_of(self, request: dict, op: str) -> Tasks:
        return self.dataset(request, op)

    def drop_conversation(self, unit: Unit) -> None:
        if unit.conversation is not None and not unit.conversation.ended:
            unit.conversation.cut("a new conversation replaced it")
        unit.conversation, unit.record = None, None

    def close(self) -> None:
        self.drop()
        if self.tools is not None:
            self.tools.remove()

    def drop(self) -> None:
        if self.unit is not None:
            self.drop_conversation(self.unit)
        if self.tools is not None:
            self.tools.close_unit()
        self.unit = None


def _entry(message: Any) -> dict:
    return {"role": "user" if isinstance(message, UserMessage) else "agent", "text": message.content or ""}


def _keep(verifier: Any, simulation: Any) -> None:
    """tau2's own record of the simulation, in the trial's verifier folder: every message, tool call and result."""
    if not isinstance(verifier, str) or not verifier:
        return
    folder = Path(verifier)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tau2-simulation.json").write_text(json.dumps(simulation.model_dump(mode="json"), indent=1))


__all__ = ["DATASETS", "Driver", "OpError"]

"""Reading a Chat Completions (or Gemini) request as a model would: for the players (fake-model scripts) of agents that speak it.

`read_chat(body, framing)` gives the user's prompts in order (with the
agent's own framing, such as `<system-reminder>` blocks, taken out), the
tool results since the last prompt, and the whole text of the system and
user messages, where agents state their working directory. `read_gemini` reads
a Gemini API body (`contents` of `parts`) into the same. `ChatPlayer` plays every
agent kit through one agent's tools, given how that agent names them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import attrs

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.fake_model.request import gemini_result, gemini_text
from nullius_core.testing.kits import FileMove, conversation_answer, task_word, tools_kit_move, workspace_kit_move


@attrs.frozen
class ChatRead:
    prompts: list[str]  # the user's words, one entry per user message that has any
    results: list[str]  # the tool results since the last prompt, oldest first
    context: str  # the system and user messages' text whole, framing included
    calls: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)  # each result's call: (tool, arguments)


def message_text(message: dict[str, Any]) -> str:
    """A message's text: its string content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def read_chat(body: dict[str, Any], framing: re.Pattern[str] | None = None) -> ChatRead:
    """Read a Chat Completions body; `framing` matches the agent's own text in user messages, which is not the user's."""
    prompts: list[str] = []
    results: list[str] = []
    calls: list[tuple[str, dict[str, Any]]] = []
    asked: dict[str, tuple[str, dict[str, Any]]] = {}  # tool_call_id -> the call
    context: list[str] = []
    for message in body.get("messages") or []:
        role, text = message.get("role"), message_text(message)
        if role in ("system", "user"):
            context.append(text)
        if role == "user":
            words = (framing.sub("", text) if framing else text).strip()
            if words:
                prompts.append(words)
                results, calls = [], []
        elif role == "assistant":
            for made in message.get("tool_calls") or []:
                asked[made.get("id", "")] = _call_of(made)
        elif role == "tool":
            results.append(text)
            calls.append(asked.get(message.get("tool_call_id", ""), ("", {})))
    return ChatRead(prompts=prompts, results=results, context="\n".join(context), calls=calls)


def read_gemini(body: dict[str, Any], framing: re.Pattern[str] | None = None) -> ChatRead:
    """Read a Gemini API body: user text parts are prompts, functionResponse parts results, the model's functionCall parts calls."""
    prompts: list[str] = []
    results: list[str] = []
    calls: list[tuple[str, dict[str, Any]]] = []
    asked: dict[str, tuple[str, dict[str, Any]]] = {}  # the call's id (else its name) -> the call
    context = [gemini_text(body.get("systemInstruction")) or ""]
    for content in body.get("contents") or []:
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        if content.get("role", "user") == "model":
            for made in (p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)):
                args = made.get("args")
                asked[made.get("id") or made.get("name", "")] = (made.get("name", ""), args if isinstance(args, dict) else {})
            continue
        text = gemini_text(content) or ""
        context.append(text)
        words = (framing.sub("", text) if framing else text).strip()
        if words:
            prompts.append(words)
            results, calls = [], []
        for part in parts:
            if isinstance(part.get("functionResponse"), dict):
                answer = part["functionResponse"]
                results.append(gemini_result(part))
                calls.append(asked.get(answer.get("id") or answer.get("name", ""), (answer.get("name", ""), {})))
    return ChatRead(prompts=prompts, results=results, context="\n".join(context), calls=calls)


def _call_of(made: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    function = made.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = {}
    return function.get("name", ""), arguments if isinstance(arguments, dict) else {}


def call(tool: str, /, **arguments: Any) -> Reply:
    """A reply that is one call of `tool` (positional only: an argument may be called `name`)."""
    return Reply(tool_calls=[ToolCall(name=tool, arguments=arguments)])


Office = Callable[[FakeRequest, ChatRead], "Reply | None"]  # plays the tools kit, or None when it is not that kit


def direct_office(prefix: str) -> Office:
    """The tools kit when the agent offers the office's MCP tools to its model directly, each as `prefix` + its name."""

    def play(request: FakeRequest, read: ChatRead) -> Reply | None:
        if not any(name.startswith(prefix) for name in request.tools):
            return None
        move = tools_kit_move(read.prompts[0], read.results)
        if move is None:
            return None
        return call(prefix + move.tool, **move.arguments) if move.tool else Reply(text=move.answer)

    return play


@attrs.frozen
class FileTools:
    """An agent's file tools, by name and argument names: `files` of a ChatPlayer (the workspace kit's moves)."""

    write: str
    read: str
    edit: str
    path: str  # each tool's absolute path argument
    content: str  # write's
    old: str  # edit's text replaced
    new: str  # edit's new text
    shell: str = ""  # the agent's shell tool (its `command`), for the `mkdir` move of an agent whose write makes no folders

    def __call__(self, move: FileMove) -> Reply:
        if move.action == "mkdir":
            return call(self.shell, command=f"mkdir -p {move.path}")
        if move.action == "write":
            return call(self.write, **{self.path: move.path, self.content: move.text})
        if move.action == "read":
            return call(self.read, **{self.path: move.path})
        return call(self.edit, **{self.path: move.path, self.old: move.old, self.new: move.text})


@attrs.frozen
class ChatPlayer:
    """A capable model playing the agent kits over Chat Completions, through one agent's own tools.

    - agent.task/v1: the word, alone.
    - agent.workspace/v1: `files` turns each move of `workspace_kit_move` into the agent's tool call, in the
      working directory `cwd` finds in the system or user text (its group 1), reading the files' text from
      the tool results with `numbered` (the agent's line numbers) taken out and `result` (the agent's wrapping
      of a result, such as JSON) read off. With `mkdir`, write-file makes the file's folder first (the agent's
      write makes none).
    - agent.conversation/v1: acknowledges the code word, then recalls it.
    - agent.tools/v1: `office` (such as `direct_office("mcp__office__")`) calls the office's tools as the agent
      offers them.
    A request that offers no tools is a side call (a title, a summary): it gets `side_text`.
    """

    cwd: re.Pattern[str]
    files: Callable[[FileMove], Reply]
    office: Office
    framing: re.Pattern[str] | None = None
    numbered: re.Pattern[str] | None = None
    result: Callable[[str], str] | None = None
    mkdir: bool = False
    side_text: str = "Nullius kit"

    def respond(self, request: FakeRequest) -> Reply | None:
        body = request.body if isinstance(request.body, dict) else {}
        read = (read_gemini if request.api == "gemini" else read_chat)(body, self.framing)
        if not read.prompts or not request.tools:
            return Reply(text=self.side_text)
        played = self.office(request, read)
        if played is not None:
            return played
        said = conversation_answer(read.prompts)
        if said is not None:
            return Reply(text=said)
        last = read.prompts[-1]
        folder = self.cwd.search(read.context)
        texts = [self.result(r) for r in read.results] if self.result else read.results
        texts = [self.numbered.sub("", r) for r in texts] if self.numbered else texts
        step = workspace_kit_move(last, folder.group(1) if folder else "", texts, mkdir=self.mkdir)
        if step is not None:
            if folder is None:
                return Reply(text="I cannot tell the working directory.")
            return self.files(step) if step.action else Reply(text=step.answer)
        return Reply(text=task_word(last) or self.side_text)


def refuse(request: FakeRequest) -> Reply | None:
    """A model that answers every request with a refusal: a kit it plays must fail (a kit that cannot fail proves nothing)."""
    return Reply(text="I would rather not.")

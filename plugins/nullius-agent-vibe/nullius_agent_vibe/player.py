"""A scripted model that plays Nullius's agent kits as a capable model would, through Mistral Vibe's own tools.

Vibe (vibe-acp, with a generic OpenAI provider) sends Chat Completions
requests. This script answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `write_file` (`path`, absolute, under the
  working directory; `content`), then a short text.
- agent.workspace/v1, fix-bug: `read_file` README.md, `read_file`
  ledger.py, then `edit` (`file_path`, `old_string`, `new_string`).
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, by the offered name that ends in
  the kit's tool name (Vibe prefixes the server's name).

The working directory comes from the system prompt's `Absolute path:` line.
Serve it with `nullius fake-model serve --script nullius_agent_vibe.player:respond`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import conversation_answer, file_to_write, task_word, tools_kit_move

SIDE_TEXT = "Nullius kit"


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _result(text: str) -> str:
    """A tool result's text: Vibe sends its tools' results as JSON objects, the file's text in `content`."""
    try:
        found = json.loads(text)
    except ValueError:
        return text
    return found["content"] if isinstance(found, dict) and isinstance(found.get("content"), str) else text


def _call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name=name, arguments=arguments)])


def _read(body: dict[str, Any]) -> tuple[list[str], list[str], str]:
    """The user's prompts, the tool results since the last one, the system prompt."""
    prompts: list[str] = []
    results: list[str] = []
    system = ""
    for message in body.get("messages") or []:
        role, text = message.get("role"), _text(message)
        if role == "system":
            system += text
        elif role == "user" and text.strip():
            prompts.append(text)
            results = []
        elif role == "tool":
            results.append(_result(text))
    return prompts, results, system


def _office(request: FakeRequest, first: str, results: list[str]) -> Reply | None:
    move = tools_kit_move(first, results)
    if move is None:
        return None
    if move.answer is not None:
        return Reply(text=move.answer)
    name = next((t for t in request.tools if t.endswith(move.tool)), move.tool)
    return _call(name, **move.arguments)


def _workspace(folder: str, last: str, results: list[str]) -> Reply:
    wanted = file_to_write(last)
    if wanted:
        return _call("write_file", path=f"{folder}/{wanted[0]}", content=wanted[1] + "\n") if not results else Reply(text="The file is written.")
    if len(results) < 2:
        return _call("read_file", path=f"{folder}/{'README.md' if not results else 'ledger.py'}")
    if len(results) == 2:
        charge = re.search(r"handling charge of\s+(\d+)", results[0])
        wrong = re.search(r"return sum\(prices\) \+ \d+", results[1])
        if not (charge and wrong):
            return Reply(text="I could not find the charge in README.md or the sum in ledger.py.")
        return _call("edit", file_path=f"{folder}/ledger.py", old_string=wrong.group(0),
                     new_string=f"return sum(prices) + {charge.group(1)}")
    return Reply(text="Fixed the handling charge in ledger.py.")


def respond(request: FakeRequest) -> Reply | None:
    prompts, results, system = _read(request.body if isinstance(request.body, dict) else {})
    if not prompts:
        return Reply(text=SIDE_TEXT)
    last = prompts[-1]
    if any(t.endswith("locate_parcel") for t in request.tools):  # agent.tools/v1
        moved = _office(request, prompts[0], results)
        if moved is not None:
            return moved
    said = conversation_answer(prompts)
    if said is not None:
        return Reply(text=said)
    if file_to_write(last) or ("ledger.py" in last and "README.md" in last):
        home = re.search(r"Absolute path: (\S+)", system)
        return _workspace(home.group(1), last, results) if home else Reply(text="I cannot tell the working directory.")
    return Reply(text=task_word(last) or SIDE_TEXT)


def respond_wrongly(request: FakeRequest) -> Reply | None:
    return Reply(text="I would rather not.")

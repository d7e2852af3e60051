"""A scripted model that plays Nullius's agent kits as a capable model would, through GitHub Copilot CLI's own tools.

Copilot CLI in BYOK mode sends OpenAI Chat Completions requests. This script
reads them as a model would and answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `bash` (`mkdir -p` of the file's folder:
  Copilot's `create` needs the folder to exist), then `create` (`path`,
  absolute, under the session's working directory; `file_text`), then a
  short text.
- agent.workspace/v1, fix-bug: `view` README.md, `view` ledger.py, then an
  `edit` of ledger.py (`path`, `old_str`, `new_str`) putting README's charge
  in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, which Copilot offers as
  `<server>-<tool>` (`office-locate_parcel`).

Copilot's own framing is skipped: it opens each user message with tagged
blocks (`<current_datetime>...</current_datetime>`), which are not the
user's words. The working directory comes from the system prompt's
`Current working directory:` line, as the model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
Copilot CLI with no key: serve it with
`nullius fake-model serve --script nullius_agent_copilot.player:respond`.
"""

from __future__ import annotations

import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import conversation_answer, file_to_write, task_word, tools_kit_move

SIDE_TEXT = "Nullius kit"
TAGGED = re.compile(r"<([a-z_]+)>.*?</\1>", re.S)
OFFICE = "office-"  # Copilot names an MCP server's tool <server>-<tool>


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _tool(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name=name, arguments=arguments)])


def conversation(body: dict[str, Any]) -> tuple[list[str], list[str], str]:
    """The user's prompts in order, the tool results since the last one, and the system prompt."""
    prompts: list[str] = []
    results: list[str] = []
    system = ""
    for message in body.get("messages") or []:
        role = message.get("role")
        if role == "system":
            system += _text(message)
        elif role == "user":
            words = TAGGED.sub("", _text(message)).strip()
            if words:
                prompts.append(words)
                results = []
        elif role == "tool":
            results.append(_text(message))
    return prompts, results, system


def _fix_bug(folder: str, results: list[str]) -> Reply:
    if len(results) == 0:
        return _tool("view", path=f"{folder}/README.md")
    if len(results) == 1:
        return _tool("view", path=f"{folder}/ledger.py")
    if len(results) == 2:
        charge = re.search(r"handling charge of\s+(\d+)", results[0])
        wrong = re.search(r"return sum\(prices\) \+ \d+", results[1])
        if not (charge and wrong):
            return Reply(text="I could not find the charge in README.md or the sum in ledger.py.")
        return _tool("edit", path=f"{folder}/ledger.py", old_str=wrong.group(0),
                     new_str=f"return sum(prices) + {charge.group(1)}")
    return Reply(text="Fixed the handling charge in ledger.py.")


def _write_file(folder: str, wanted: tuple[str, str], results: list[str]) -> Reply:
    path = f"{folder}/{wanted[0]}"
    if len(results) == 0:
        return _tool("bash", command=f"mkdir -p {path.rsplit('/', 1)[0]}", description="Make the folder")
    if len(results) == 1:
        return _tool("create", path=path, file_text=wanted[1] + "\n")
    return Reply(text="The file is written.")


def respond(request: FakeRequest) -> Reply | None:
    body = request.body if isinstance(request.body, dict) else {}
    prompts, results, system = conversation(body)
    if not prompts:
        return Reply(text=SIDE_TEXT)
    last = prompts[-1]
    if any(name.startswith(OFFICE) for name in request.tools):  # agent.tools/v1
        move = tools_kit_move(prompts[0], results)
        if move is not None:
            if move.tool is not None:
                return _tool(OFFICE + move.tool, **move.arguments)
            return Reply(text=move.answer)
    said = conversation_answer(prompts)  # agent.conversation/v1
    if said is not None:
        return Reply(text=said)
    home = re.search(r"Current working directory: (\S+)", system)
    wanted = file_to_write(last)  # agent.workspace/v1, write-file
    if wanted or ("ledger.py" in last and "README.md" in last):
        if home is None:
            return Reply(text="I cannot tell the working directory.")
        return _write_file(home.group(1), wanted, results) if wanted else _fix_bug(home.group(1), results)
    word = task_word(last)  # agent.task/v1
    return Reply(text=word or SIDE_TEXT)


def respond_wrongly(request: FakeRequest) -> Reply | None:
    return Reply(text="I would rather not.")

"""A scripted model that plays Nullius's agent kits as a capable model would, through fast-agent's own tools.

fast-agent (`fast-agent acp --shell`, its generic OpenAI-compatible
provider) sends Chat Completions requests. This script reads them as a model
would and answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `bash` (`mkdir -p` of the file's folder),
  then `write_text_file` (`path`, absolute, under the workspace root;
  `content`), then a short text.
- agent.workspace/v1, fix-bug: `read_text_file` README.md, `read_text_file`
  ledger.py, then `edit_file` (`path`, `old_string`, `new_string`) putting
  README's charge in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, by the offered name that ends in
  the kit's tool name (fast-agent prefixes the server's name).

The workspace comes from the system prompt's `Workspace root:` line, as the
model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
fast-agent with no key: serve it with
`nullius fake-model serve --script nullius_agent_fast_agent.player:respond`.
"""

from __future__ import annotations

import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import conversation_answer, file_to_write, task_word, tools_kit_move

SIDE_TEXT = "Nullius kit"
WORKSPACE = re.compile(r"Workspace root: (\S+)")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name=name, arguments=arguments)])


def conversation(body: dict[str, Any]) -> tuple[list[str], list[str], str]:
    """The user's prompts in order, the tool results since the last one, and the system prompt."""
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
            results.append(text)
    return prompts, results, system


def _office(request: FakeRequest, first: str, results: list[str]) -> Reply | None:
    move = tools_kit_move(first, results)
    if move is None:
        return None
    if move.tool is None:
        return Reply(text=move.answer)
    name = next((t for t in request.tools if t.endswith(move.tool)), move.tool)
    return _call(name, **move.arguments)


def _write_file(folder: str, wanted: tuple[str, str], results: list[str]) -> Reply:
    path = f"{folder}/{wanted[0]}"
    if len(results) == 0:
        return _call("bash", command=f"mkdir -p {path.rsplit('/', 1)[0]}")
    if len(results) == 1:
        return _call("write_text_file", path=path, content=wanted[1] + "\n")
    return Reply(text="The file is written.")


def _fix_bug(folder: str, results: list[str]) -> Reply:
    if len(results) < 2:
        return _call("read_text_file", path=f"{folder}/{'README.md' if not results else 'ledger.py'}")
    if len(results) == 2:
        charge = re.search(r"handling charge of\s+(\d+)", results[0])
        wrong = re.search(r"return sum\(prices\) \+ \d+", results[1])
        if not (charge and wrong):
            return Reply(text="I could not find the charge in README.md or the sum in ledger.py.")
        return _call("edit_file", path=f"{folder}/ledger.py", old_string=wrong.group(0),
                     new_string=f"return sum(prices) + {charge.group(1)}")
    return Reply(text="Fixed the handling charge in ledger.py.")


def respond(request: FakeRequest) -> Reply | None:
    prompts, results, system = conversation(request.body if isinstance(request.body, dict) else {})
    if not prompts:
        return Reply(text=SIDE_TEXT)
    last = prompts[-1]
    if any(t.endswith("locate_parcel") for t in request.tools):  # agent.tools/v1
        moved = _office(request, prompts[0], results)
        if moved is not None:
            return moved
    said = conversation_answer(prompts)  # agent.conversation/v1
    if said is not None:
        return Reply(text=said)
    wanted = file_to_write(last)  # agent.workspace/v1
    if wanted or ("ledger.py" in last and "README.md" in last):
        home = WORKSPACE.search(system)
        if home is None:
            return Reply(text="I cannot tell the working directory.")
        return _write_file(home.group(1), wanted, results) if wanted else _fix_bug(home.group(1), results)
    return Reply(text=task_word(last) or SIDE_TEXT)


def respond_wrongly(request: FakeRequest) -> Reply | None:
    return Reply(text="I would rather not.")

"""A scripted model that plays Nullius's agent kits as a capable model would, through Claude Code's own tools.

Claude Code (inside Claude Agent ACP) sends Anthropic Messages requests. This
script reads them as a model would and answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: a `Write` tool_use (`file_path`, absolute,
  under the session's working directory; `content`), then a short text.
- agent.workspace/v1, fix-bug: `Read` README.md, `Read` ledger.py (Claude
  Code refuses to edit a file it has not read), then an `Edit` of ledger.py
  (`file_path`, `old_string`, `new_string`) putting README's charge in place
  of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it from the
  earlier message of the history that gave it.

Claude Code's own framing is skipped: a user message's text blocks that start
with `<` (`<system-reminder>`, `<local-command-caveat>`, `<command-name>`,
`<local-command-stdout>`) are not the user's words. The working directory
comes from the system prompt's `Primary working directory:` line, as the
model reads it. Read's results number their lines (`     1→text`); the
numbers are stripped before reading them.

Requests that are none of these (a side call, such as a title or a topic
check, should Claude Code send one) get a short text. `count_tokens` gets the
fake server's own count. `respond_wrongly` answers everything with a refusal:
a kit that cannot fail proves nothing.

It ships in this distribution, so that a pip-installed Nullius can prove
Claude Agent ACP with no key: serve it with
`nullius fake-model serve --script nullius_agent_claude.player:respond`.
"""

from __future__ import annotations

import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import conversation_answer, file_to_write, task_word, tools_kit_move

SIDE_TEXT = "Nullius kit"
LINE_NUMBER = re.compile(r"^[ ]*\d+(?:→|\t)", re.M)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _words(message: dict[str, Any]) -> str:
    """The user's own words in a user message: its text blocks, without Claude Code's tagged framing."""
    texts = [b.get("text", "") for b in _blocks(message) if b.get("type") == "text"]
    return "\n".join(t for t in texts if t.strip() and not t.lstrip().startswith("<"))


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return LINE_NUMBER.sub("", content or "")


def _system(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return system or ""


def _tool(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name=name, arguments=arguments)])


def conversation(body: dict[str, Any]) -> tuple[list[str], list[tuple[str, bool, str]]]:
    """The user's prompts in order, and the tool results since the last one: (tool name, is_error, text)."""
    prompts: list[str] = []
    results: list[tuple[str, bool, str]] = []
    names: dict[str, str] = {}
    for message in body.get("messages") or []:
        if message.get("role") == "assistant":
            for block in _blocks(message):
                if block.get("type") == "tool_use":
                    names[block.get("id", "")] = block.get("name", "")
            continue
        words = _words(message)
        if words:
            prompts.append(words)
            results = []
        for block in _blocks(message):
            if block.get("type") == "tool_result":
                results.append((names.get(block.get("tool_use_id", ""), "?"), bool(block.get("is_error")), _result_text(block)))
    return prompts, results


def respond(request: FakeRequest) -> Reply | None:
    if request.api == "count_tokens":
        return None
    body = request.body if isinstance(request.body, dict) else {}
    prompts, results = conversation(body)
    if not prompts:
        return Reply(text=SIDE_TEXT)
    last = prompts[-1]
    if any(name.startswith("mcp__office__") for name in request.tools):  # agent.tools/v1: the office's MCP tools
        move = tools_kit_move(prompts[0], [text for _, _, text in results])
        if move is not None:
            if move.tool is not None:
                return _tool("mcp__office__" + move.tool, **move.arguments)
            return Reply(text=move.answer)
    failed = [text for _, is_error, text in results if is_error]
    if failed:  # say what went wrong, so the check fails with Claude Code's own words in the transcript
        return Reply(text="A tool failed: " + failed[-1][:500])
    home = re.search(r"Primary working directory: (\S+)", _system(body))
    said = conversation_answer(prompts)  # agent.conversation/v1: remember, then recall
    if said is not None:
        return Reply(text=said)
    wanted = file_to_write(last)  # agent.workspace/v1, write-file
    if wanted:
        if home is None:
            return Reply(text="I cannot tell the working directory.")
        if not results:
            return _tool("Write", file_path=f"{home.group(1)}/{wanted[0]}", content=wanted[1] + "\n")
        return Reply(text="The file is written.")
    # agent.workspace/v1, fix-bug
    if "ledger.py" in last and "README.md" in last:
        if home is None:
            return Reply(text="I cannot tell the working directory.")
        folder = home.group(1)
        if len(results) == 0:
            return _tool("Read", file_path=f"{folder}/README.md")
        if len(results) == 1:
            return _tool("Read", file_path=f"{folder}/ledger.py")
        if len(results) == 2:
            charge = re.search(r"handling charge of\s+(\d+)", results[0][2])
            wrong = re.search(r"return sum\(prices\) \+ (\d+)", results[1][2])
            if not (charge and wrong):
                return Reply(text="I could not find the charge in README.md or the sum in ledger.py.")
            return _tool("Edit", file_path=f"{folder}/ledger.py", old_string=wrong.group(0),
                         new_string=f"return sum(prices) + {charge.group(1)}")
        return Reply(text="Fixed the handling charge in ledger.py.")
    word = task_word(last)  # agent.task/v1: the one word, alone
    return Reply(text=word or SIDE_TEXT)


def respond_wrongly(request: FakeRequest) -> Reply | None:
    if request.api == "count_tokens":
        return None
    return Reply(text="I would rather not.")

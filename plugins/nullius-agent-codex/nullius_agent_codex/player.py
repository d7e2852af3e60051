"""A scripted model that plays Nullius's kits as a capable model would, through Codex's own tools.

Codex (codex-acp 0.16.0, Codex core 0.137.0) sends `POST /v1/responses`,
streamed, with `instructions`, `input` items and its tools. For a model slug
it has no metadata for (the fake model's), its shell tool is `exec_command`
(`{"cmd": "<a shell command line>", "workdir"?, ...}`, run by the user's
shell as a login shell) and it offers no apply_patch tool; so every edit here
is a shell command, as a model would run it. The output comes back as a
`function_call_output` item whose text ends with the command's output.

The player reads each kit's prompt (the last user message) and the tool
outputs that followed it, and answers with the next call or the final text:

- agent.task/v1: the word, alone.
- agent.workspace/v1 write-file: `mkdir -p notes && printf ... > notes/<word>.txt`, then a short text.
- agent.workspace/v1 fix-bug: `cat README.md`, `cat ledger.py`, a `sed -i` of
  the one wrong number, then a short text.
- agent.conversation/v1: acknowledge, then recall the word from the first user message.
- agent.tools/v1: the office's MCP tools. Codex offers an MCP server's tools
  nested in one `{"type": "namespace", "name": "mcp__office", "tools": [...]}`
  tool, and takes a call of one as a `function_call` item naming the function
  (`book_collection`) and its `namespace` (`mcp__office`).

`respond_wrongly` answers every request with a refusal: a kit that cannot fail proves nothing.

It ships in this distribution, so that a pip-installed Nullius can prove
Codex ACP with no key: serve it with
`nullius fake-model serve --script nullius_agent_codex.player:respond`.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import conversation_answer, file_to_write, task_word, tools_kit_move

OFFICE = "mcp__office"  # the tools kit's MCP server, as Codex names its namespace tool
CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions instructions>")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _items(request: FakeRequest) -> list[dict[str, Any]]:
    items = request.body.get("input") if isinstance(request.body, dict) else None
    return [i for i in items or [] if isinstance(i, dict)]


def _is_prompt(item: dict[str, Any]) -> bool:
    """A user message the user wrote (not the environment context Codex adds as a user message)."""
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return False
    return not _text(item.get("content")).lstrip().startswith(CONTEXT_TAGS)


def prompts(request: FakeRequest) -> list[str]:
    return [_text(i.get("content")) for i in _items(request) if _is_prompt(i)]


def _mcp_text(output: str) -> str:
    """An MCP tool's result as Codex hands it back (`Wall time: …\nOutput:\n[{"type": "text", "text": …}]`): its texts."""
    head, sep, tail = output.partition("Output:\n")
    if not sep or not head.startswith("Wall time:"):
        return output
    try:
        content = json.loads(tail)
    except ValueError:
        return tail
    return _text(content) if isinstance(content, list) else tail


def outputs_since_prompt(request: FakeRequest) -> list[str]:
    """The tool outputs after the last user prompt, oldest first."""
    items = _items(request)
    last = max((n for n, i in enumerate(items) if _is_prompt(i)), default=-1)
    out = []
    for item in items[last + 1 :]:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            out.append(output if isinstance(output, str) else _text(output) or json.dumps(output))
    return out


def shell(request: FakeRequest, command: str) -> Reply:
    """A call of whichever shell tool Codex offers, with that tool's argument shape."""
    if "exec_command" in request.tools:
        return Reply(tool_calls=[ToolCall(name="exec_command", arguments={"cmd": command})])
    if "shell_command" in request.tools:
        return Reply(tool_calls=[ToolCall(name="shell_command", arguments={"command": command})])
    if "shell" in request.tools:
        return Reply(tool_calls=[ToolCall(name="shell", arguments={"command": ["bash", "-lc", command]})])
    raise RuntimeError(f"Codex offered no shell tool: {request.tools}")


def namespace_tools(request: FakeRequest, namespace: str) -> set[str]:
    """The functions nested in the request's `namespace` tool of that name (Codex's MCP server tools)."""
    tools = request.body.get("tools") if isinstance(request.body, dict) else None
    for tool in tools or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace" and tool.get("name") == namespace:
            return {str(t.get("name")) for t in tool.get("tools") or [] if isinstance(t, dict)}
    return set()


def office_call(request: FakeRequest, said: list[str], results: list[str]) -> Reply | None:
    """agent.tools/v1: the office's MCP tools, called as Codex offers them (functions of the `mcp__office` namespace)."""
    offered = namespace_tools(request, OFFICE)
    move = tools_kit_move(said[0], [_mcp_text(r) for r in results]) if offered else None
    if move is None:
        return None
    if move.tool is None:
        return Reply(text=move.answer)
    if move.tool not in offered:
        return Reply(text=f"The office offers no {move.tool} tool, only {sorted(offered)}.")
    return Reply(tool_calls=[ToolCall(name=move.tool, namespace=OFFICE, arguments=move.arguments)])


def respond(request: FakeRequest) -> Reply | None:
    said = prompts(request)
    if not said:
        return None
    last = said[-1]
    results = outputs_since_prompt(request)
    office = office_call(request, said, results)
    if office is not None:
        return office
    answer = conversation_answer(said)  # agent.conversation/v1: remember, then recall
    if answer is not None:
        return Reply(text=answer)
    wanted = file_to_write(last)  # agent.workspace/v1 write-file
    if wanted:
        path, token = wanted
        if not results:
            folder = path.rsplit("/", 1)[0]
            return shell(request, f"mkdir -p {shlex.quote(folder)} && printf '%s\\n' {shlex.quote(token)} > {shlex.quote(path)}")
        return Reply(text=f"Created {path}.")
    # agent.workspace/v1 fix-bug
    if "ledger.py" in last and "README.md" in last:
        if len(results) == 0:
            return shell(request, "cat README.md")
        if len(results) == 1:
            return shell(request, "cat ledger.py")
        if len(results) == 2:
            charge = re.search(r"handling charge of\s+(\d+)", results[0])
            wrong = re.search(r"return sum\(prices\) \+ (\d+)", results[1])
            if not (charge and wrong):
                return Reply(text="I could not read README.md and ledger.py.")
            return shell(request, f"sed -i 's/return sum(prices) + {wrong.group(1)}$/return sum(prices) + {charge.group(1)}/' ledger.py")
        return Reply(text="Fixed the handling charge in ledger.py.")
    word = task_word(last)  # agent.task/v1: the one word, alone
    return Reply(text=word) if word else None


def respond_wrongly(request: FakeRequest) -> Reply:
    return Reply(text="I would rather not.")

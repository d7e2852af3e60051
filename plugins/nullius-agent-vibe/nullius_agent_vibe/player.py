"""A scripted model that plays Nullius's agent kits as a capable model would, through Mistral Vibe's own tools.

Vibe (vibe-acp, with a generic OpenAI provider) sends Chat Completions
requests. This script answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `write_file` (`path`, absolute, under the
  working directory; `content`), then a short text.
- agent.workspace/v1, fix-bug: `read_file` README.md, `read_file`
  ledger.py, then `edit` (`file_path`, `old_string`, `new_string`).
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: Vibe offers the session's MCP tools only inside its
  `run_typescript` sandbox, as `tools.mcp_<server>.<tool>`. So the first
  move is `search_tool_functions` (`best_match`, the tool's name as the
  query), whose answer names the group (`mcp_office.locate_parcel`); each
  office call is then `run_typescript` with
  `async function main() { return await tools.<group>.<tool>({...}); }`.

The working directory comes from the system prompt's `Absolute path:` line.
Serve it with `nullius fake-model serve --script nullius_agent_vibe.player:respond`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import chat_turns, kit_reply, tools_kit_move, workspace_reply


OFFICE_TOOLS = ("dispatch_passphrase", "rate_quote", "locate_parcel", "shift_lead", "radio_call_sign", "customs_declaration",
                "insurance_certificate", "delivery_receipt", "return_authorisation", "book_collection")


def _result(text: str) -> str:
    """A tool result's text: Vibe sends its tools' results as JSON, a file's text in `content`, run_typescript's value as it is."""
    try:
        found = json.loads(text)
    except ValueError:
        return text
    if isinstance(found, str):
        return found
    return found["content"] if isinstance(found, dict) and isinstance(found.get("content"), str) else text


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def _office(prompts: list[str], results: list[str]) -> Reply | None:
    """The tools kit's next move. Vibe offers MCP tools only as functions of its run_typescript sandbox,
    `tools.<group>.<tool>`: the first move asks search_tool_functions for the group's name."""
    move = tools_kit_move(prompts[0], results[1:]) if prompts else None
    if move is None:
        return None
    if not results:
        return Reply(tool_calls=[_call("search_tool_functions", mode="best_match", query=move.tool.replace("_", " "))])
    group = re.search(r"([\w-]+)\.(?:" + "|".join(OFFICE_TOOLS) + r")\b", results[0])
    if group is None:
        return Reply(text="search_tool_functions found none of the office's tools.")
    if move.tool is None:
        return Reply(text=move.answer)
    code = f"async function main() {{\n  return await tools.{group.group(1)}.{move.tool}({json.dumps(move.arguments)});\n}}"
    return Reply(tool_calls=[_call("run_typescript", code=code)])


def respond(request: FakeRequest) -> Reply | None:
    prompts, results, system = chat_turns(request.body if isinstance(request.body, dict) else {}, result=_result)
    if "run_typescript" in request.tools:  # agent.tools/v1
        moved = _office(prompts, results)
        if moved is not None:
            return moved
    reply = kit_reply(prompts, results, request.tools)
    if reply is not None:
        return reply
    home = re.search(r"Absolute path: (\S+)", system)  # agent.workspace/v1
    if home is None:
        return Reply(text="I cannot tell the working directory.")
    return workspace_reply(  # write_file makes the folders it needs
        home.group(1), prompts[-1], results,
        write=lambda path, text: _call("write_file", path=path, content=text),
        read=lambda path: _call("read_file", path=path),
        edit=lambda path, old, new: _call("edit", file_path=path, old_string=old, new_string=new),
    )


def respond_wrongly(request: FakeRequest) -> Reply | None:
    return Reply(text="I would rather not.")

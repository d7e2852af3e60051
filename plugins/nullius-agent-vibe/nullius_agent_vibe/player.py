"""A scripted model that plays Nullius's agent kits as a capable model would, through Mistral Vibe's own tools.

Vibe (vibe-acp, with a generic OpenAI provider) sends Chat Completions
requests. This script answers (`nullius_core.testing.chat.ChatPlayer`):

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
Serve it with `nullius fake-model serve --script nullius_agent_vibe.player:respond`;
`respond_wrongly` answers everything with a refusal.
"""

from __future__ import annotations

import json
import re

from nullius_core.testing.chat import ChatPlayer, ChatRead, FileTools, call, refuse
from nullius_core.testing.fake_model import FakeRequest, Reply
from nullius_core.testing.kits import FileMove, tools_kit_move

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


def office(request: FakeRequest, read: ChatRead) -> Reply | None:
    """The tools kit's next move. Vibe offers MCP tools only as functions of its run_typescript sandbox,
    `tools.<group>.<tool>`: the first move asks search_tool_functions for the group's name."""
    if "run_typescript" not in request.tools:
        return None
    results = [_result(r) for r in read.results]
    move = tools_kit_move(read.prompts[0], results[1:])
    if move is None:
        return None
    if not results:
        return call("search_tool_functions", mode="best_match", query=move.tool.replace("_", " "))
    group = re.search(r"([\w-]+)\.(?:" + "|".join(OFFICE_TOOLS) + r")\b", results[0])
    if group is None:
        return Reply(text="search_tool_functions found none of the office's tools.")
    if move.tool is None:
        return Reply(text=move.answer)
    code = f"async function main() {{\n  return await tools.{group.group(1)}.{move.tool}({json.dumps(move.arguments)});\n}}"
    return call("run_typescript", code=code)


TOOLS = FileTools("write_file", "read_file", "edit", path="path", content="content", old="old_string", new="new_string")


def files(move: FileMove) -> Reply:
    """Vibe's file tools (write_file makes the folders it needs); `edit` names its path `file_path`, the others `path`."""
    if move.action == "edit":
        return call("edit", file_path=move.path, old_string=move.old, new_string=move.text)
    return TOOLS(move)


PLAYER = ChatPlayer(
    cwd=re.compile(r"Absolute path: (\S+)"),
    files=files,
    office=office,
    result=_result,
)
respond = PLAYER.respond
respond_wrongly = refuse

"""A scripted model that plays Nullius's agent kits as a capable model would, through Qwen Code's own tools.

Qwen Code sends OpenAI Chat Completions requests. This script reads them as a
model would and answers (`nullius_core.testing.chat.ChatPlayer`):

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `write_file` (`file_path`, absolute, under
  the working directory; `content`), then a short text.
- agent.workspace/v1, fix-bug: `read_file` README.md, `read_file` ledger.py,
  then an `edit` of ledger.py (`file_path`, `old_string`, `new_string`)
  putting README's charge in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools. Qwen Code defers MCP tools: it
  lists them (`mcp__office__locate_parcel`, ...) in a `<system-reminder>`
  of the first user message and offers only its `tool_search` and
  `tool_call` bridge. So the player reviews each office tool first
  (`tool_search` with `select:<name>`), then calls it through `tool_call`
  (`name`, `arguments`), and reads the results of those calls only.

Qwen Code's own framing is skipped: it opens the first user message with a
`<system-reminder>` block (the date, the working directory, the folder's
tree, the skills), which is not the user's words. The working directory
comes from that block's `I'm currently working in the directory:` line, as
the model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
Qwen Code with no key: serve it with
`nullius fake-model serve --script nullius_agent_qwen.player:respond`.
`respond_wrongly` answers everything with a refusal.
"""

from __future__ import annotations

import re

from nullius_core.testing.chat import ChatPlayer, ChatRead, FileTools, call, refuse
from nullius_core.testing.fake_model import FakeRequest, Reply
from nullius_core.testing.kits import tools_kit_move

OFFICE = "mcp__office__"  # Qwen Code names an MCP server's tool mcp__<server>__<tool>


def office(request: FakeRequest, read: ChatRead) -> Reply | None:
    """The tools kit through Qwen Code's bridge, when the reminder lists the office's tools as deferred ones."""
    if "tool_call" not in request.tools or OFFICE not in read.context:
        return None
    done = [text for text, (tool, _) in zip(read.results, read.calls) if tool == "tool_call"]
    move = tools_kit_move(read.prompts[0], done)
    if move is None:
        return None
    if move.tool is None:
        return Reply(text=move.answer)
    reviewed = {arguments.get("query") for tool, arguments in read.calls if tool == "tool_search"}
    if f"select:{OFFICE}{move.tool}" not in reviewed:
        return call("tool_search", query=f"select:{OFFICE}{move.tool}")
    return call("tool_call", name=OFFICE + move.tool, arguments=move.arguments)


PLAYER = ChatPlayer(
    cwd=re.compile(r"I'm currently working in the directory: (\S+)"),
    files=FileTools("write_file", "read_file", "edit", path="file_path", content="content", old="old_string", new="new_string"),
    office=office,
    framing=re.compile(r"<system-reminder>.*?</system-reminder>", re.S),
)
respond = PLAYER.respond
respond_wrongly = refuse

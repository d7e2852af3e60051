"""A scripted model that plays Nullius's agent kits as a capable model would, through Gemini CLI's own tools.

Gemini CLI sends Gemini API requests (`contents` of `parts`). This script
reads them as a model would (`nullius_core.testing.chat.read_gemini`, through
`ChatPlayer`) and answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `write_file` (`file_path`, absolute, under
  the working directory; `content`), then a short text.
- agent.workspace/v1, fix-bug: `read_file` README.md, `read_file` ledger.py,
  then a `replace` in ledger.py (`file_path`, `old_string`, `new_string`
  and the `instruction` Gemini CLI requires of it) putting README's charge
  in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, which Gemini CLI offers its model
  directly as `mcp_office_<tool>` (`mcp_` + server + `_` + tool).

Gemini CLI's own framing is skipped: it opens the chat with a
`<session_context>` block (the date, the OS, the workspace directories and
their tree), which is not the user's words. The working directory comes
from that block's `**Workspace Directories:**` list, as the model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
Gemini CLI with no key: serve it with
`nullius fake-model serve --script nullius_agent_gemini.player:respond`.
`respond_wrongly` answers everything with a refusal.
"""

from __future__ import annotations

import re

from nullius_core.testing.chat import ChatPlayer, FileTools, call, direct_office, refuse
from nullius_core.testing.fake_model import Reply
from nullius_core.testing.kits import FileMove

TOOLS = FileTools("write_file", "read_file", "replace", path="file_path", content="content", old="old_string", new="new_string")


def files(move: FileMove) -> Reply:
    """Gemini CLI's file tools; its `replace` refuses a call without an `instruction` (`params must have required property`)."""
    if move.action in ("write", "read"):
        return TOOLS(move)
    return call("replace", file_path=move.path, old_string=move.old, new_string=move.text,
                instruction="Put the charge README.md states in place of the wrong one.")


PLAYER = ChatPlayer(
    cwd=re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*- (\S+)"),
    files=files,
    office=direct_office("mcp_office_"),
    framing=re.compile(r"<(session_context|hook_context)>.*?</\1>", re.S),
)
respond = PLAYER.respond
respond_wrongly = refuse

"""A scripted model that plays Nullius's agent kits as a capable model would, through Kimi CLI's own tools.

Kimi CLI (`kimi acp`, with an `openai_legacy` provider) sends Chat
Completions requests. This script reads them as a model would and answers
(`nullius_core.testing.chat.ChatPlayer`):

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `Shell` (`mkdir -p` of the file's folder),
  then `WriteFile` (`path`, absolute, under the working directory;
  `content`), then a short text.
- agent.workspace/v1, fix-bug: `ReadFile` README.md, `ReadFile`
  ledger.py (read without the line numbers ReadFile puts before each line),
  then `StrReplaceFile` (`path`, `edit: {old, new}`) putting README's charge
  in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, by the offered name that ends in
  the kit's tool name (Kimi offers them by their own names).

The working directory comes from the system prompt's `The current working
directory is` line, as the model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
Kimi CLI with no key: serve it with
`nullius fake-model serve --script nullius_agent_kimi.player:respond`.
`respond_wrongly` answers everything with a refusal.
"""

from __future__ import annotations

import re

from nullius_core.testing.chat import ChatPlayer, FileTools, call, direct_office, refuse
from nullius_core.testing.fake_model import Reply
from nullius_core.testing.kits import FileMove

TOOLS = FileTools("WriteFile", "ReadFile", "StrReplaceFile", path="path", content="content", old="old", new="new",
                  shell="Shell")


def files(move: FileMove) -> Reply:
    """Kimi's file tools; StrReplaceFile takes its replacement as one `edit` object ({old, new})."""
    if move.action == "edit":
        return call("StrReplaceFile", path=move.path, edit={"old": move.old, "new": move.text})
    return TOOLS(move)


PLAYER = ChatPlayer(
    cwd=re.compile(r"The current working directory is `([^`]+)`"),
    files=files,
    office=direct_office(""),  # Kimi offers the session's MCP tools by their own names
    numbered=re.compile(r"^ *\d+\t", re.M),  # ReadFile numbers each line: `     5\t33. An empty list ...`
    mkdir=True,  # WriteFile makes no folders
)
respond = PLAYER.respond
respond_wrongly = refuse

"""A scripted model that plays Nullius's agent kits as a capable model would, through OpenCode's own tools.

OpenCode, with its custom OpenAI-compatible provider, sends OpenAI Chat
Completions requests. This script reads them as a model would and answers
(`nullius_core.testing.chat.ChatPlayer`):

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `write` (`filePath`, absolute, under the
  working directory; `content`), then a short text.
- agent.workspace/v1, fix-bug: `read` README.md, `read` ledger.py (OpenCode
  refuses to edit a file it has not read; it numbers the lines it gives,
  `5: 95. ...`, and the numbers are taken out before reading them), then
  an `edit` of ledger.py
  (`filePath`, `oldString`, `newString`) putting README's charge in place of
  the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, which OpenCode offers as
  `<server>_<tool>` (`office_locate_parcel`).

The working directory comes from the system prompt's `<env>` block
(`Working directory:`), as the model reads it. OpenCode's side call, a
title for the session, offers no tools: it gets a short text.

It ships in this distribution, so that a pip-installed Nullius can prove
OpenCode with no key: serve it with
`nullius fake-model serve --script nullius_agent_opencode.player:respond`.
`respond_wrongly` answers everything with a refusal.
"""

from __future__ import annotations

import re

from nullius_core.testing.chat import ChatPlayer, FileTools, direct_office, refuse

PLAYER = ChatPlayer(
    cwd=re.compile(r"Working directory: (\S+)"),
    files=FileTools("write", "read", "edit", path="filePath", content="content", old="oldString", new="newString"),
    office=direct_office("office_"),
    numbered=re.compile(r"^\d+: ", re.M),  # `read` numbers each line: `5: 95. An empty list ...`
)
respond = PLAYER.respond
respond_wrongly = refuse

"""A scripted model that plays Nullius's agent kits as a capable model would, through Kilo Code CLI's own tools.

Kilo Code CLI is a fork of OpenCode, and with its custom OpenAI-compatible
provider it sends OpenAI Chat Completions requests with OpenCode's tools.
This script reads them as a model would and answers
(`nullius_core.testing.chat.ChatPlayer`):

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `write` (`filePath`, absolute, under the
  working directory; `content`), then a short text.
- agent.workspace/v1, fix-bug: `read` README.md, `read` ledger.py (the
  line numbers it adds, `5: 95. ...`, are taken out before reading them),
  then an `edit` of ledger.py (`filePath`, `oldString`, `newString`)
  putting README's charge in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, offered as `<server>_<tool>`
  (`office_locate_parcel`).

The working directory comes from the `Working directory:` line, as the
model reads it. Kilo adds an `<environment_details>` block (the time, the
working directory) to each user message: it is not the user's words, and is
taken out. A request that offers no tools (a title) gets a short text.

It ships in this distribution, so that a pip-installed Nullius can prove
Kilo with no key: serve it with
`nullius fake-model serve --script nullius_agent_kilo.player:respond`.
`respond_wrongly` answers everything with a refusal.
"""

from __future__ import annotations

import re

from nullius_core.testing.chat import ChatPlayer, FileTools, direct_office, refuse

PLAYER = ChatPlayer(
    cwd=re.compile(r"Working directory: (\S+)"),
    files=FileTools("write", "read", "edit", path="filePath", content="content", old="oldString", new="newString"),
    office=direct_office("office_"),
    framing=re.compile(r"<environment_details>.*?</environment_details>", re.S),
    numbered=re.compile(r"^\d+: ", re.M),  # `read` numbers each line: `5: 95. An empty list ...`
)
respond = PLAYER.respond
respond_wrongly = refuse

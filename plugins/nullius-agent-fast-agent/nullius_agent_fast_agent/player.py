"""A scripted model that plays Nullius's agent kits as a capable model would, through fast-agent's own tools.

fast-agent (`fast-agent acp --shell`, its generic OpenAI-compatible
provider) sends Chat Completions requests. This script reads them as a model
would and answers
(`nullius_core.testing.chat.ChatPlayer`):

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `bash` (`mkdir -p` of the file's folder),
  then `write_text_file` (`path`, absolute, under the workspace root;
  `content`), then a short text.
- agent.workspace/v1, fix-bug: `read_text_file` README.md, `read_text_file`
  ledger.py, then `edit_file` (`path`, `old_string`, `new_string`) putting
  README's charge in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, by the offered name that ends in
  the kit's tool name (fast-agent names them `office__<tool>`).

The workspace comes from the system prompt's `Workspace root:` line, as the
model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
fast-agent with no key: serve it with
`nullius fake-model serve --script nullius_agent_fast_agent.player:respond`.
`respond_wrongly` answers everything with a refusal.
"""

from __future__ import annotations

import re

from nullius_core.testing.chat import ChatPlayer, FileTools, direct_office, refuse

PLAYER = ChatPlayer(
    cwd=re.compile(r"Workspace root: (\S+)"),
    files=FileTools("write_text_file", "read_text_file", "edit_file", path="path", content="content",
                    old="old_string", new="new_string", shell="bash"),
    office=direct_office("office__"),  # fast-agent names an MCP server's tool <server>__<tool>
    mkdir=True,  # write_text_file makes no folders
)
respond = PLAYER.respond
respond_wrongly = refuse

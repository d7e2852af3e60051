"""A scripted model that plays Nullius's agent kits as a capable model would, through fast-agent's own tools.

fast-agent (`fast-agent acp --shell`, its generic OpenAI-compatible
provider) sends Chat Completions requests. This script reads them as a model
would and answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `bash` (`mkdir -p` of the file's folder),
  then `write_text_file` (`path`, absolute, under the workspace root;
  `content`), then a short text.
- agent.workspace/v1, fix-bug: `read_text_file` README.md, `read_text_file`
  ledger.py, then `edit_file` (`path`, `old_string`, `new_string`) putting
  README's charge in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, by the offered name that ends in
  the kit's tool name (fast-agent prefixes the server's name).

The workspace comes from the system prompt's `Workspace root:` line, as the
model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
fast-agent with no key: serve it with
`nullius fake-model serve --script nullius_agent_fast_agent.player:respond`.
"""

from __future__ import annotations

import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import chat_turns, kit_reply, workspace_reply

WORKSPACE = re.compile(r"Workspace root: (\S+)")


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def respond(request: FakeRequest) -> Reply | None:
    prompts, results, system = chat_turns(request.body if isinstance(request.body, dict) else {})
    reply = kit_reply(prompts, results, request.tools)
    if reply is not None:
        return reply
    home = WORKSPACE.search(system)  # agent.workspace/v1
    if home is None:
        return Reply(text="I cannot tell the working directory.")
    return workspace_reply(
        home.group(1), prompts[-1], results,
        mkdir=lambda folder: _call("bash", command=f"mkdir -p {folder}"),
        write=lambda path, text: _call("write_text_file", path=path, content=text),
        read=lambda path: _call("read_text_file", path=path),
        edit=lambda path, old, new: _call("edit_file", path=path, old_string=old, new_string=new),
    )


def respond_wrongly(request: FakeRequest) -> Reply | None:
    return Reply(text="I would rather not.")

"""A scripted model that plays Nullius's agent kits as a capable model would, through Kimi CLI's own tools.

Kimi CLI (`kimi acp`, with an `openai_legacy` provider) sends Chat
Completions requests. This script reads them as a model would and answers:

- agent.task/v1: the word the prompt asks for, alone.
- agent.workspace/v1, write-file: `Shell` (`mkdir -p` of the file's folder),
  then `WriteFile` (`path`, absolute, under the working directory;
  `content`), then a short text.
- agent.workspace/v1, fix-bug: `ReadFile` README.md, `ReadFile` ledger.py
  (read without the line numbers ReadFile puts before each line), then `StrReplaceFile` (`path`, `edit: {old, new}`) putting README's charge
  in place of the wrong one, then a short text.
- agent.conversation/v1: acknowledges the code word, then recalls it.
- agent.tools/v1: the office's MCP tools, by the offered name that ends in
  the kit's tool name.

The working directory comes from the system prompt's `The current working
directory is` line, as the model reads it.

It ships in this distribution, so that a pip-installed Nullius can prove
Kimi CLI with no key: serve it with
`nullius fake-model serve --script nullius_agent_kimi.player:respond`.
"""

from __future__ import annotations

import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall
from nullius_core.testing.kits import chat_turns, kit_reply, workspace_reply

WORKING_DIRECTORY = re.compile(r"The current working directory is `([^`]+)`")
LINE_NUMBER = re.compile(r"^ *\d+\t", re.M)  # ReadFile numbers each line: `     5\t33. An empty list ...`


def _unnumbered(result: str) -> str:
    return LINE_NUMBER.sub("", result)


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def respond(request: FakeRequest) -> Reply | None:
    prompts, results, system = chat_turns(request.body if isinstance(request.body, dict) else {}, result=_unnumbered)
    reply = kit_reply(prompts, results, request.tools)
    if reply is not None:
        return reply
    home = WORKING_DIRECTORY.search(system)  # agent.workspace/v1
    if home is None:
        return Reply(text="I cannot tell the working directory.")
    return workspace_reply(
        home.group(1), prompts[-1], results,
        mkdir=lambda folder: _call("Shell", command=f"mkdir -p {folder}"),
        write=lambda path, text: _call("WriteFile", path=path, content=text),
        read=lambda path: _call("ReadFile", path=path),
        edit=lambda path, old, new: _call("StrReplaceFile", path=path, edit={"old": old, "new": new}),
    )


def respond_wrongly(request: FakeRequest) -> Reply | None:
    return Reply(text="I would rather not.")

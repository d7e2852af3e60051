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
from nullius_core.testing.kits import chat_turns, file_to_write, fix_bug_edit, kit_reply

WORKING_DIRECTORY = re.compile(r"The current working directory is `([^`]+)`")
LINE_NUMBER = re.compile(r"^ *\d+\t", re.M)  # ReadFile numbers each line: `     5\t33. An empty list ...`


def _unnumbered(result: str) -> str:
    return LINE_NUMBER.sub("", result)


def _call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name=name, arguments=arguments)])


def _write_file(folder: str, wanted: tuple[str, str], results: list[str]) -> Reply:
    path = f"{folder}/{wanted[0]}"
    if len(results) == 0:
        return _call("Shell", command=f"mkdir -p {path.rsplit('/', 1)[0]}")
    if len(results) == 1:
        return _call("WriteFile", path=path, content=wanted[1] + "\n")
    return Reply(text="The file is written.")


def _fix_bug(folder: str, results: list[str]) -> Reply:
    if len(results) < 2:
        return _call("ReadFile", path=f"{folder}/{'README.md' if not results else 'ledger.py'}")
    if len(results) == 2:
        edit = fix_bug_edit(results[0], results[1])
        if edit is None:
            return Reply(text="I could not find the charge in README.md or the sum in ledger.py.")
        return _call("StrReplaceFile", path=f"{folder}/ledger.py", edit={"old": edit[0], "new": edit[1]})
    return Reply(text="Fixed the handling charge in ledger.py.")


def respond(request: FakeRequest) -> Reply | None:
    prompts, results, system = chat_turns(request.body if isinstance(request.body, dict) else {}, result=_unnumbered)
    reply = kit_reply(prompts, results, request.tools)
    if reply is not None:
        return reply
    home = WORKING_DIRECTORY.search(system)  # agent.workspace/v1
    if home is None:
        return Reply(text="I cannot tell the working directory.")
    wanted = file_to_write(prompts[-1])
    return _write_file(home.group(1), wanted, results) if wanted else _fix_bug(home.group(1), results)


def respond_wrongly(request: FakeRequest) -> Reply | None:
    return Reply(text="I would rather not.")

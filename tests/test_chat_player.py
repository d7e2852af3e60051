"""nullius_core.testing.chat: a Chat Completions request read as a model reads it, and the kits played from it."""

from __future__ import annotations

import json
import re

from nullius_core.testing.chat import ChatPlayer, FileTools, direct_office, read_chat, refuse
from nullius_core.testing.fake_model import FakeRequest

FRAMING = re.compile(r"<note>.*?</note>", re.S)
PLAYER = ChatPlayer(
    cwd=re.compile(r"Working in: (\S+)"),
    files=FileTools("put", "get", "change", path="where", content="body", old="before", new="after"),
    office=direct_office("office."),
    framing=FRAMING,
    numbered=re.compile(r"^\d+\| ", re.M),
)
WRITE = "In the current folder, create the file notes/vanubil.txt (make the notes folder if it is not there). The file must contain exactly this one line and nothing else:\n\nNLS-93758588A9E5"
FIX = "The function in ledger.py, in the current folder, does not do what README.md says it must. Find the bug and fix it."


def request(messages: list[dict], tools: tuple[str, ...] = ("put", "get", "change")) -> FakeRequest:
    body = {"model": "m", "messages": messages, "tools": [{"type": "function", "function": {"name": t}} for t in tools]}
    return FakeRequest(api="chat", method="POST", path="/v1/chat/completions", query={}, headers={}, body=body, model="m",
                       stream=True, tools=tools, last_user_message=None, last_tool_result=None, call=1)


def user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": "<note>Working in: /w\n</note>"}, {"type": "text", "text": text}]}


def called(tool: str, arguments: dict, n: int) -> list[dict]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}
    return [{"role": "assistant", "content": "", "tool_calls": [call]}]


def answered(text: str, n: int) -> dict:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": text}


def test_read_chat_takes_the_framing_out_and_pairs_each_result_with_its_call():
    messages = [{"role": "system", "content": "sys"}, user("Say hi."), *called("get", {"where": "/w/a"}, 1), answered("text", 1)]
    read = read_chat({"messages": messages}, FRAMING)
    assert read.prompts == ["Say hi."]
    assert read.results == ["text"] and read.calls == [("get", {"where": "/w/a"})]
    assert "Working in: /w" in read.context and "sys" in read.context


def test_the_player_plays_the_workspace_kit_through_the_agents_own_tool_names():
    first = PLAYER.respond(request([user(WRITE)]))
    assert first.tool_calls[0].name == "put"
    assert first.tool_calls[0].arguments == {"where": "/w/notes/vanubil.txt", "body": "NLS-93758588A9E5\n"}
    readme = "1| must return their sum plus a fixed handling charge of\n2| 95. An empty list"
    ledger = "6|     return sum(prices) + 93"
    history = [user(FIX), *called("get", {}, 1), answered(readme, 1), *called("get", {}, 2), answered(ledger, 2)]
    edit = PLAYER.respond(request(history)).tool_calls[0]
    assert edit.name == "change"  # the line numbers taken out: the charge is 95, not the line's number
    assert edit.arguments == {"where": "/w/ledger.py", "before": "return sum(prices) + 93", "after": "return sum(prices) + 95"}


def test_the_player_calls_the_office_answers_the_task_and_gives_side_calls_a_short_text():
    office = PLAYER.respond(request([user("Find today's dispatch passphrase.")], tools=("get", "office.dispatch_passphrase")))
    assert office.tool_calls[0].name == "office.dispatch_passphrase"
    assert PLAYER.respond(request([user("Reply with exactly this word and nothing else: dotemil")])).text == "dotemil"
    assert PLAYER.respond(request([user(WRITE)], tools=())).text == "Nullius kit"  # no tools offered: a title, say
    assert refuse(request([user(WRITE)])).text == "I would rather not."


def test_the_player_makes_the_folder_first_and_reads_results_through_the_agents_wrapping():
    shelled = ChatPlayer(cwd=PLAYER.cwd, office=PLAYER.office, framing=FRAMING, mkdir=True, result=lambda t: json.loads(t)["content"],
                         files=FileTools("put", "get", "change", path="where", content="body", old="before", new="after", shell="sh"))
    first = shelled.respond(request([user(WRITE)], tools=("sh", "put")))
    assert (first.tool_calls[0].name, first.tool_calls[0].arguments) == ("sh", {"command": "mkdir -p /w/notes"})
    then = shelled.respond(request([user(WRITE), *called("sh", {}, 1), answered(json.dumps({"content": ""}), 1)], tools=("sh", "put")))
    assert then.tool_calls[0].name == "put"
    readme = json.dumps({"content": "must return their sum plus a fixed handling charge of\n95. An empty list"})
    ledger = json.dumps({"content": "    return sum(prices) + 93\n"})
    history = [user(FIX), *called("get", {}, 1), answered(readme, 1), *called("get", {}, 2), answered(ledger, 2)]
    edit = shelled.respond(request(history)).tool_calls[0]
    assert edit.arguments == {"where": "/w/ledger.py", "before": "return sum(prices) + 93", "after": "return sum(prices) + 95"}

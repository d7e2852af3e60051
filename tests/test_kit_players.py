"""What players of Chat Completions agents share (nullius_core.testing.kits): reading a request, and the kits' moves."""

from __future__ import annotations

from nullius_core.testing.fake_model import Reply, ToolCall
from nullius_core.testing.kits import SIDE_TEXT, chat_turns, fix_bug_edit, kit_reply, offered_tool, workspace_reply

README = "`total(prices)` must return their sum plus a fixed handling charge of\n33. An empty list costs 33."
LEDGER = "def total(prices):\n    return sum(prices) + 43\n"


def test_chat_turns_reads_prompts_results_since_the_last_prompt_and_the_system_prompt():
    body = {"messages": [
        {"role": "system", "content": "Workspace root: /w"},
        {"role": "user", "content": [{"type": "text", "text": "<tag>framing</tag>"}]},  # blank once the hook reads it off
        {"role": "user", "content": "first"},
        {"role": "tool", "content": '"old result"'},
        {"role": "user", "content": [{"type": "text", "text": "second "}]},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "content": '"new result"'},
    ]}
    prompts, results, system = chat_turns(body, user=lambda t: t.replace("<tag>framing</tag>", ""), result=lambda t: t.strip('"'))
    assert (prompts, results, system) == (["first", "second"], ["new result"], "Workspace root: /w")
    assert chat_turns({}) == ([], [], "")


def test_kit_reply_answers_every_kit_but_the_workspace_kits():
    assert kit_reply([], [], []) == Reply(text=SIDE_TEXT)  # a side call: no prompt
    assert kit_reply(["Reply with exactly this word and nothing else: zolapin"], [], []) == Reply(text="zolapin")
    remember = "Please remember this code word for later in our conversation: mibotak. For now, only acknowledge"
    assert kit_reply([remember, "What was the code word I gave you in my first message?"], [], []) == Reply(text="mibotak")
    office = ["Couriers must quote today's dispatch passphrase at the depot gate. Find out what it is."]
    tools = ["bash", "office__locate_parcel", "office__dispatch_passphrase"]
    assert kit_reply(office, [], tools) == Reply(tool_calls=[ToolCall(name="office__dispatch_passphrase", arguments={})])
    assert kit_reply(office, ["Today's dispatch passphrase: palotan"], tools) == Reply(text="palotan")
    assert kit_reply(["The function in ledger.py does not do what README.md says it must."], [], tools) is None


def test_fix_bug_edit_and_offered_tool():
    assert fix_bug_edit(README, LEDGER) == ("return sum(prices) + 43", "return sum(prices) + 33")
    assert fix_bug_edit("no charge here", LEDGER) is None
    assert offered_tool(["office-rate_quote", "bash"], "rate_quote") == "office-rate_quote"
    assert offered_tool(["bash"], "rate_quote") == "rate_quote"  # not offered: the kit's own name


def _calls(reply: Reply) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in reply.tool_calls]


def test_workspace_reply_plays_both_checks_through_the_agents_own_tools():
    tools = {
        "write": lambda path, text: ToolCall(name="w", arguments={"p": path, "t": text}),
        "read": lambda path: ToolCall(name="r", arguments={"p": path}),
        "edit": lambda path, old, new: ToolCall(name="e", arguments={"p": path, "old": old, "new": new}),
    }
    mkdir = {"mkdir": lambda folder: ToolCall(name="m", arguments={"d": folder})}
    write = "In the current folder, create the file notes/vanubil.txt (make it). The file must contain exactly this one line and nothing else:\n\nNLS-93758588A9E5"
    assert _calls(workspace_reply("/w", write, [], **tools, **mkdir)) == [("m", {"d": "/w/notes"})]
    assert _calls(workspace_reply("/w", write, ["made"], **tools, **mkdir)) == [("w", {"p": "/w/notes/vanubil.txt", "t": "NLS-93758588A9E5\n"})]
    assert workspace_reply("/w", write, ["made", "written"], **tools, **mkdir) == Reply(text="The file is written.")
    assert _calls(workspace_reply("/w", write, [], **tools)) == [("w", {"p": "/w/notes/vanubil.txt", "t": "NLS-93758588A9E5\n"})]
    fix = "The function in ledger.py, in the current folder, does not do what README.md says it must."
    assert _calls(workspace_reply("/w", fix, [], **tools)) == [("r", {"p": "/w/README.md"})]
    assert _calls(workspace_reply("/w", fix, [README], **tools)) == [("r", {"p": "/w/ledger.py"})]
    assert _calls(workspace_reply("/w", fix, [README, LEDGER], **tools)) == [
        ("e", {"p": "/w/ledger.py", "old": "return sum(prices) + 43", "new": "return sum(prices) + 33"})]
    assert workspace_reply("/w", fix, ["unreadable", LEDGER], **tools).text.startswith("I could not find")

"""How a capable model plays Nullius's tools kit, whatever API it speaks: for plugin authors' fake-model scripts.

`tools_kit_move(first_prompt, tool_results)` reads the kit's prompt and the
office tools' results so far and says the next move: a call of one of the
office's tools, or the final answer. `conversation_answer(prompts)` answers
the conversation kit's two turns (remember a code word, then say it), and
`file_to_write(prompt)` reads the workspace kit's write-file check and `fix_bug_edit(readme, ledger)` its
fix-bug check. A script for an agent wraps it in that
agent's API and tool names (the reference agent and Claude Code name the
office's tools `mcp__office__<tool>`; `offered_tool` finds the name an agent
gave one). `chat_turns(body)` reads a Chat Completions request as these need it, and
`kit_reply(prompts, results, offered)` answers every kit but the workspace kit's, whose tools are each agent's own:
`workspace_reply(folder, prompt, results, ...)` plays that one with the agent's file tools, given as functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from nullius_core.testing.fake_model.script import Reply, ToolCall

SIDE_TEXT = "Nullius kit"  # the answer to a call that carries no kit's prompt (an agent's title or summary call)


@attrs.frozen
class Move:
    tool: str | None = None  # a call of this office tool ...
    arguments: dict[str, Any] = attrs.field(factory=dict)
    answer: str | None = None  # ... or the final answer


def _code(text: str) -> str:
    found = re.search(r"[A-Z]{2}-\d{6}", text)
    return found.group(0) if found else text.strip()


def tools_kit_move(first: str, results: list[str]) -> Move | None:
    """The next move in one of the tools kit's five checks, or None when `first` is not one of its prompts."""
    n, last = len(results), (results[-1] if results else "")
    if "dispatch passphrase" in first:  # one-tool
        return Move("dispatch_passphrase") if n == 0 else Move(answer=last.split(": ")[-1].strip())
    found = re.search(r"weighing (\d+) kg to (\w+)", first)
    if found:  # arguments: a string and an integer
        if n == 0:
            return Move("rate_quote", {"destination": found.group(2), "weight_kg": int(found.group(1))})
        return Move(answer=_code(last))
    parcel = re.search(r"[Pp]arcel (P-\d{7})", first)
    if parcel and "radio call sign" in first:  # chain: three hops, each output the next one's input
        if n == 0:
            return Move("locate_parcel", {"parcel_id": parcel.group(1)})
        if n == 1:
            return Move("shift_lead", {"depot_code": re.search(r"[A-Z]{3}-\d{2}", last).group(0)})
        if n == 2:
            return Move("radio_call_sign", {"staff_id": re.search(r"S-\d{5}", last).group(0)})
        return Move(answer=last.split(": ")[-1].strip())
    if parcel:  # decoys: the right document among look-alikes
        kinds = {"customs": "customs_declaration", "insurance": "insurance_certificate", "receipt": "delivery_receipt", "return": "return_authorisation"}
        tool = next(t for k, t in kinds.items() if k in first.split("Find")[1])
        return Move(tool, {"parcel_id": parcel.group(1)}) if n == 0 else Move(answer=_code(last))
    booking = re.search(r"at depot (\S+) for (\d\d)/(\d\d)/(\d{4})", first)
    if booking:  # retry: the first call is refused, the second corrected
        depot, day, month, year = booking.groups()
        if n == 0:
            return Move("book_collection", {"depot_code": depot, "date": f"{day}/{month}/{year}"})
        if n == 1:
            return Move("book_collection", {"depot_code": depot.upper(), "date": f"{year}-{month}-{day}"})
        return Move(answer=_code(last))
    return None


def conversation_answer(prompts: list[str]) -> str | None:
    """The conversation kit's answer to its last prompt (the user's prompts so far), or None when it is not that kit's."""
    last = prompts[-1] if prompts else ""
    if "code word I gave you" in last:
        words = [re.search(r"code word for later in our conversation: (\w+)", p) for p in prompts]
        word = next((w for w in words if w), None)
        return word.group(1) if word else "I do not remember."
    if "remember this code word" in last:
        return "Noted; I have it."
    return None


def file_to_write(prompt: str) -> tuple[str, str] | None:
    """The workspace kit's write-file check: (the path, the one line it must hold), or None."""
    wanted = re.search(r"create the file (\S+\.txt).*?nothing else:\s*\n\n(\S+)", prompt, re.S)
    return (wanted.group(1), wanted.group(2)) if wanted else None


def task_word(prompt: str) -> str | None:
    """The word the task kit's prompt asks to be answered alone, or None."""
    for pattern in (r"nothing else: (\w+)\s*$", r"formatting\.\n\n(\w+)\s*$", r"The word is (\w+)\."):
        found = re.search(pattern, prompt)
        if found:
            return found.group(1)
    return None


def fix_bug_edit(readme: str, ledger: str) -> tuple[str, str] | None:
    """The fix-bug check's edit, (the wrong line's text, its fix), from what README.md and ledger.py say; None when unread."""
    charge = re.search(r"handling charge of\s+(\d+)", readme)
    wrong = re.search(r"return sum\(prices\) \+ \d+", ledger)
    if not (charge and wrong):
        return None
    return wrong.group(0), f"return sum(prices) + {charge.group(1)}"


def offered_tool(offered: Iterable[str], tool: str) -> str:
    """The offered name of the office's `tool`: agents prefix the server's name in their own ways (`office__`, `office-`)."""
    return next((name for name in offered if name.endswith(tool)), tool)


def message_text(message: dict[str, Any]) -> str:
    """A Chat Completions message's text: its content, a string or the joined text parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _same(text: str) -> str:
    return text


def chat_turns(
    body: dict[str, Any], user: Callable[[str], str] = _same, result: Callable[[str], str] = _same
) -> tuple[list[str], list[str], str]:
    """A Chat Completions request's user prompts in order, the tool results since the last one, and the system prompt.

    `user` and `result` read an agent's own framing off a message's text
    (tags it adds to the user's words, JSON around a tool's result); a user
    message left blank by `user` is no prompt.
    """
    prompts: list[str] = []
    results: list[str] = []
    system = ""
    for message in body.get("messages") or []:
        role, text = message.get("role"), message_text(message)
        if role == "system":
            system += text
        elif role == "user" and user(text).strip():
            prompts.append(user(text).strip())
            results = []
        elif role == "tool":
            results.append(result(text))
    return prompts, results, system


def kit_reply(prompts: list[str], results: list[str], offered: Iterable[str]) -> Reply | None:
    """The reply of a capable model to the task, conversation and tools kits, or None for the workspace kit's prompts.

    `prompts` and `results` as `chat_turns` gives them; `offered` the names of
    the tools offered (the office's, however the agent prefixes them).
    """
    if not prompts:
        return Reply(text=SIDE_TEXT)
    last, offered = prompts[-1], list(offered)
    if any(t.endswith("locate_parcel") for t in offered):  # agent.tools/v1
        move = tools_kit_move(prompts[0], results)
        if move is not None and move.tool is not None:
            return Reply(tool_calls=[ToolCall(name=offered_tool(offered, move.tool), arguments=move.arguments)])
        if move is not None:
            return Reply(text=move.answer)
    said = conversation_answer(prompts)  # agent.conversation/v1
    if said is not None:
        return Reply(text=said)
    if file_to_write(last) or ("ledger.py" in last and "README.md" in last):  # agent.workspace/v1
        return None
    return Reply(text=task_word(last) or SIDE_TEXT)  # agent.task/v1


def workspace_reply(
    folder: str,
    prompt: str,
    results: list[str],
    *,
    write: Callable[[str, str], ToolCall],
    read: Callable[[str], ToolCall],
    edit: Callable[[str, str, str], ToolCall],
    mkdir: Callable[[str], ToolCall] | None = None,
) -> Reply:
    """The workspace kit's next move in `folder` (the session's cwd, absolute) through an agent's own file tools.

    write-file: `mkdir(folder)` first for an agent whose write makes no
    folders, then `write(path, text)`; fix-bug: `read(README.md)`,
    `read(ledger.py)`, then `edit(ledger.py, old, new)`. Then a short text.
    """
    wanted = file_to_write(prompt)
    if wanted:
        path = f"{folder}/{wanted[0]}"
        steps = ([mkdir(path.rsplit("/", 1)[0])] if mkdir else []) + [write(path, wanted[1] + "\n")]
        return Reply(tool_calls=[steps[len(results)]]) if len(results) < len(steps) else Reply(text="The file is written.")
    if len(results) < 2:
        return Reply(tool_calls=[read(f"{folder}/{'README.md' if not results else 'ledger.py'}")])
    if len(results) == 2:
        found = fix_bug_edit(results[0], results[1])
        if found is None:
            return Reply(text="I could not find the charge in README.md or the sum in ledger.py.")
        return Reply(tool_calls=[edit(f"{folder}/ledger.py", *found)])
    return Reply(text="Fixed the handling charge in ledger.py.")

"""How a capable model plays Nullius's tools kit, whatever API it speaks: for plugin authors' fake-model scripts.

`tools_kit_move(first_prompt, tool_results)` reads the kit's prompt and the
office tools' results so far and says the next move: a call of one of the
office's tools, or the final answer. `conversation_answer(prompts)` answers
the conversation kit's two turns (remember a code word, then say it), and
`file_to_write(prompt)` reads the workspace kit's write-file check, and
`workspace_kit_move(prompt, folder, results)` plays both of its checks with
three file actions (write, read, edit). A script for an agent wraps them in
that agent's API and tool names (the reference agent and Claude Code name the
office's tools `mcp__office__<tool>`).
"""

from __future__ import annotations

import re
from typing import Any

import attrs


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


@attrs.frozen
class FileMove:
    """A move in the workspace kit: `mkdir` (path), `write` (path, text), `read` (path), `edit` (path, old, text), or the
    last reply."""

    action: str | None = None  # "mkdir", "write", "read", "edit"; None: reply `answer` and end the turn
    path: str = ""  # absolute: the folder given, then the kit's file
    text: str = ""  # write: the file's content; edit: the new text
    old: str = ""  # edit: the text it replaces
    answer: str | None = None


def workspace_kit_move(prompt: str, folder: str, results: list[str], mkdir: bool = False) -> FileMove | None:
    """The next move in the workspace kit's checks (write-file, fix-bug), in the folder the agent works in, after
    these tool results since the prompt; None when `prompt` is neither check's. `mkdir`: the agent's write makes no
    folders, so write-file first makes the file's folder (a `mkdir` move, its path the folder)."""
    wanted = file_to_write(prompt)
    if wanted:
        path = f"{folder}/{wanted[0]}"
        steps = [FileMove("mkdir", path.rsplit("/", 1)[0])] if mkdir else []
        steps.append(FileMove("write", path, text=wanted[1] + "\n"))
        return steps[len(results)] if len(results) < len(steps) else FileMove(answer="The file is written.")
    if "ledger.py" not in prompt or "README.md" not in prompt:
        return None
    if len(results) < 2:
        return FileMove("read", f"{folder}/{('README.md', 'ledger.py')[len(results)]}")
    if len(results) > 2:
        return FileMove(answer="Fixed the handling charge in ledger.py.")
    charge = re.search(r"handling charge of\s+(\d+)", results[0])
    wrong = re.search(r"return sum\(prices\) \+ \d+", results[1])
    if not (charge and wrong):
        return FileMove(answer="I could not find the charge in README.md or the sum in ledger.py.")
    return FileMove("edit", f"{folder}/ledger.py", text=f"return sum(prices) + {charge.group(1)}", old=wrong.group(0))

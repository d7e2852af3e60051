"""nullius_core.testing.kits: the workspace kit's moves, which every agent's player turns into its own tool calls."""

from __future__ import annotations

from nullius_core.testing.kits import FileMove, workspace_kit_move

WRITE = "In the current folder, create the file notes/vanubil.txt (make the notes folder if it is not there). The file must contain exactly this one line and nothing else:\n\nNLS-93758588A9E5"
FIX = "The function in ledger.py, in the current folder, does not do what README.md says it must. Find the bug and fix it."
README = "A list of prices must return their sum plus a fixed handling charge of\n33. An empty list"
LEDGER = "def total(prices):\n    return sum(prices) + 43\n"


def test_write_file_makes_the_folder_first_for_an_agent_whose_write_makes_none():
    written = FileMove("write", "/w/notes/vanubil.txt", text="NLS-93758588A9E5\n")
    assert workspace_kit_move(WRITE, "/w", []) == written
    assert workspace_kit_move(WRITE, "/w", ["ok"]) == FileMove(answer="The file is written.")
    assert workspace_kit_move(WRITE, "/w", [], mkdir=True) == FileMove("mkdir", "/w/notes")
    assert workspace_kit_move(WRITE, "/w", [""], mkdir=True) == written  # mkdir -p says nothing
    assert workspace_kit_move(WRITE, "/w", ["", "ok"], mkdir=True) == FileMove(answer="The file is written.")


def test_fix_bug_reads_both_files_then_puts_the_readmes_charge_in():
    assert workspace_kit_move(FIX, "/w", []) == FileMove("read", "/w/README.md")
    assert workspace_kit_move(FIX, "/w", [README]) == FileMove("read", "/w/ledger.py")
    assert workspace_kit_move(FIX, "/w", [README, LEDGER], mkdir=True) == FileMove(
        "edit", "/w/ledger.py", text="return sum(prices) + 33", old="return sum(prices) + 43")
    assert workspace_kit_move(FIX, "/w", ["unreadable", LEDGER]).answer.startswith("I could not find")
    assert workspace_kit_move("Reply with exactly this word and nothing else: dotemil", "/w", []) is None

"""What a definition's folder may hold: `{here}` paths and links that stay inside it.

A definition's folder is handed whole to what it runs (the driver's
`{here}`, the agent's definition folder mounted read-only in its
container), so a path that leaves it, or a link planted in it that resolves
elsewhere, would hand over files of this machine that no one listed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from nullius_core.definitions.files import read_json
from nullius_core.definitions.jsontext import leaves
from nullius_core.definitions.problems import Problem

# `{here}` and the path written after it, up to what ends a path in a command
# word or a variable's value (a space, PATH's `:`, a list's `,` or `;`).
HERE = re.compile(r"\{here\}([^\s:;,'\"]*)")

# A folder of its own holds a driver, a few data files and kits; more than
# this is a definition put in a folder it shares (a home directory, say).
MAX_ENTRIES = 10_000


def inside(folder: Path, target: Path) -> bool:
    """`target`, every link followed, lies in `folder` (itself resolved); a link that loops lies nowhere."""
    try:
        return target.resolve().is_relative_to(folder.resolve())
    except (RuntimeError, OSError):  # "Symlink loop", or a path the system will not follow
        return False


def leads_to(target: Path) -> str:
    """Where `target` leads, every link followed, for a message."""
    try:
        return str(target.resolve())
    except (RuntimeError, OSError) as exc:
        return f"a link that cannot be followed ({exc})"


def here_problems(file: Path, raw: Any) -> list[Problem]:
    """Every `{here}...` in the file that names a place outside the file's folder."""
    folder = file.parent
    problems = []
    for path, value in leaves(raw):
        if not isinstance(value, str):
            continue
        for match in HERE.finditer(value):
            # as the run fills it: the folder's path, then what follows {here}
            target = Path(str(folder) + match.group(1))
            if not inside(folder, target):
                problems.append(Problem(
                    path,
                    f"expected a path inside the definition's folder ({folder}), found {match.group(0)!r}, which is {leads_to(target)}",
                    file,
                ))
    return problems


def link_problems(file: Path) -> list[Problem]:
    """Every link in the file's folder that resolves outside it, and a folder that is not its own."""
    folder = file.parent
    problems = []
    seen = 0
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(dirs + files):
            seen += 1
            entry = Path(top) / name
            if entry.is_symlink() and not inside(folder, entry):
                shown = entry.relative_to(folder)
                problems.append(Problem(
                    "$", f"expected every link in the definition's folder to stay inside it, found {shown} -> {os.readlink(entry)}", file
                ))
        if seen > MAX_ENTRIES:
            problems.append(Problem(
                "$", f"expected a folder of its own (at most {MAX_ENTRIES} files and folders), found more in {folder}", file
            ))
            break
    return problems


def folder_problems(file: Path) -> list[Problem]:
    """What `nullius check` and a run refuse of a definition's folder (raises DefinitionError for a file that is not JSON)."""
    return here_problems(file, read_json(file)) + link_problems(file)

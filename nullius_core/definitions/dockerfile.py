"""An environment's Dockerfile, read as the standard asks: a layer on the base image, its context only the listed files.

No `FROM` (Nullius writes it), no `ADD`, no `COPY --from`; `COPY` only of
files the environment lists. Each problem names its line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s*(.*)$")


def instructions(text: str) -> list[tuple[int, str, str]]:
    """(first line, KEYWORD, arguments) of each instruction; continuation lines joined, comments dropped."""
    out, pending, start = [], "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole, pending = pending + line, ""
        match = INSTRUCTION.match(whole)
        if match:
            out.append((start, match.group(1).upper(), match.group(2).strip()))
    return out


def layer_problems(text: str, files: list[str]) -> list[tuple[int, str]]:
    """(line, what is wrong) for each instruction that does not belong in an environment's layer."""
    found: list[tuple[int, str]] = []
    allowed = {str(PurePosixPath(f)) for f in files}
    for line, keyword, args in instructions(text):
        if keyword == "FROM":
            found.append((line, "FROM is not allowed: Nullius layers the Dockerfile on the base image itself"))
        elif keyword == "ADD":
            found.append((line, "ADD is refused: use COPY of a file the environment lists"))
        elif keyword == "COPY":
            try:
                words = shlex.split(args)
            except ValueError as exc:
                found.append((line, f"COPY cannot be read: {exc}"))
                continue
            flags = [w for w in words if w.startswith("--")]
            sources = [w for w in words if not w.startswith("--")][:-1]
            if any(f.startswith("--from") for f in flags):
                found.append((line, "COPY --from is refused: only the listed files enter the build"))
            for source in sources:
                if str(PurePosixPath(source)) not in allowed:
                    found.append((line, f"COPY of {source!r}, which the environment's files do not list"))
    return found

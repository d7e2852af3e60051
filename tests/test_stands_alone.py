"""The project stands on its own: no tracked file reads the development workspace beside it, or any folder above it.

A clone on a user's machine has nothing beside it; a file that reaches for
the workspace's shared folder one level up (its specification, datasets and peers) works only
where it was written. Prose may name the workspace (docs say where the peers
of a measurement were); code, scripts and data may not.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A path into the workspace's shared folder, or the repository's own root climbed out of.
REACHES_OUT = re.compile(
    r"\.\./shared\b"
    r"|\bshared/(?:datasets|peers|spec|reference|hooks)\b"
    r"|[\"']shared[\"']\s*/\s*[\"']"
    r"|\b(?:ROOT|REPO|REPOSITORY)\.parents?\b"
)
PROSE = (".md",)


def tracked() -> list[Path]:
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if done.returncode != 0:
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    return [ROOT / name for name in done.stdout.decode().split("\0") if name]


def test_no_tracked_file_reads_outside_the_repository():
    me = Path(__file__).resolve()
    found = []
    for path in tracked():
        if path.suffix in PROSE or path == me or not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file names no path
        for number, line in enumerate(text.splitlines(), 1):
            if REACHES_OUT.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:160]}")
    assert not found, "these tracked files read outside the repository:\n" + "\n".join(found)


def test_the_pattern_catches_what_it_must():
    up = "../" + "shared"  # spelt in two, so that this check is not itself a file naming the folder
    for line in (f'seed = "{up}/datasets/gsm8k/test.jsonl"', 'PEERS = ROOT.parent / "shared" / "peers"',
                 'candidates += [folder / "shared" / "datasets"]', "REPOSITORY.parents[1]"):
        assert REACHES_OUT.search(line), line
    for line in ('"shared address space (100.64.0.0/10)"', "env_shared_installs", 'HERE.parent / "tests"'):
        assert not REACHES_OUT.search(line), line

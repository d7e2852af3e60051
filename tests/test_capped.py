"""The capped log: small output whole; large output as its head, its tail and lines saying exactly how much was cut."""

from __future__ import annotations

import random
import re

import pytest

from nullius_core.processes.capped import CappedLog


def capped(data: bytes, chunks: random.Random, head: int, tail: int) -> bytes:
    out = bytearray()
    log = CappedLog(out.extend, head=head, tail=tail, what="stderr")
    i = 0
    while i < len(data):
        n = chunks.randint(1, 9000)
        log.write(data[i : i + n])
        i += n
    log.close()
    return bytes(out)


def lines(n: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    return b"".join(f"line {i} ".encode() + b"y" * rnd.randint(0, 300) + b"\n" for i in range(n))


@pytest.mark.parametrize("seed", range(6))
def test_output_within_the_cap_is_kept_whole(seed):
    data = lines(200, seed)
    assert capped(data, random.Random(seed), head=len(data) // 2, tail=len(data) - len(data) // 2) == data


@pytest.mark.parametrize("seed", range(6))
def test_output_over_the_cap_keeps_whole_lines_of_its_head_and_tail_and_says_what_was_cut(seed):
    data = lines(5000, seed)
    kept = capped(data, random.Random(seed), head=64 * 1024, tail=32 * 1024)
    notes = re.findall(rb"^\[nullius\] .*\n", kept, re.M)
    assert len(notes) == 2  # one where the cut begins (a killed run leaves it), one before the tail
    first, rest = kept.split(notes[0])
    middle, last = rest.split(notes[1])
    assert middle == b""
    assert data.startswith(first) and data.endswith(last)
    assert first.endswith(b"\n") and last.startswith(b"line ")  # cut at lines' edges
    assert len(first) <= 64 * 1024 and len(last) <= 32 * 1024 and len(first) > 60 * 1024 and len(last) > 31 * 1024
    cut = len(data) - len(first) - len(last)
    assert f"[nullius] {cut} bytes of stderr cut".encode() in notes[1]
    assert f"its first {len(first)} bytes are above, its last {len(last)} bytes below".encode() in notes[1]

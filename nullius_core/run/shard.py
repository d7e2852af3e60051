"""Shards: a unit belongs to shard `sha256(unit id) mod N`, whatever machine runs it.

Order: the driver's `units`, then the shard, then `--limit`. A unit keeps its
place: its position in the whole dataset, in every shard.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections.abc import Iterable, Iterator

import attrs

from nullius_core.jobs.names import Names


@attrs.frozen
class Shard:
    index: int  # 1-based, as the command line writes it
    of: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
        if not match:
            raise ValueError(f"a shard is I/N, such as 1/2; not {text!r}")
        index, of = int(match.group(1)), int(match.group(2))
        if of < 1 or not 1 <= index <= of:
            raise ValueError(f"a shard I/N needs 1 <= I <= N; not {text!r}")
        return cls(index, of)

    def holds(self, unit: str) -> bool:
        return shard_of(unit, self.of) == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.of}"


def shard_of(unit: str, of: int) -> int:
    return int.from_bytes(hashlib.sha256(unit.encode()).digest(), "big") % of


@attrs.frozen
class Planned:
    """A unit chosen to run, with its place in the whole dataset."""

    unit: str
    position: int


class Plan:
    """The units chosen to run and their places, held compactly (jobs/names.py): a run of 100,000 units keeps a few
    bytes a unit, not an object; each `Planned` is made when it is read."""

    __slots__ = ("units", "positions")

    def __init__(self) -> None:
        self.units = Names()
        self.positions = array("q")

    def add(self, unit: str, position: int) -> None:
        self.units.append(unit)
        self.positions.append(position)

    def __len__(self) -> int:
        return len(self.positions)

    def __iter__(self) -> Iterator[Planned]:
        return (Planned(u, p) for u, p in zip(self.units, self.positions))


def plan(units: Iterable[str], shard: Shard | None, limit: int | None) -> Plan:
    chosen = Plan()
    for position, unit in enumerate(units):
        if limit is not None and len(chosen) >= limit:
            break
        if shard is None or shard.holds(unit):
            chosen.add(unit, position)
    return chosen

"""Many short names held as one buffer: what a run of 100,000 units keeps of each unit.

A str object costs about 50 bytes before its text, and a list slot 8 more:
a run that held every unit id, planned trial and Harbor trial-name list as
str objects grew by about half a kilobyte a unit. `Names` holds the names'
UTF-8 text in one bytearray and their ends in an array: about 10 bytes a
name beyond its text, and no object until one is read.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload


class Names(Sequence[str]):
    """An append-only sequence of str, compact; equal to a list of the same names."""

    __slots__ = ("_text", "_ends")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._text = bytearray()
        self._ends = array("q")
        for name in names:
            self.append(name)

    def append(self, name: str) -> None:
        self._text += name.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._text))

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self._ends)
        if not 0 <= index < len(self._ends):
            raise IndexError("Names index out of range")
        start = self._ends[index - 1] if index else 0
        return self._text[start:self._ends[index]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        text, start = self._text, 0
        for end in self._ends:
            yield text[start:end].decode("utf-8", "surrogatepass")
            start = end

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Names):
            return self._ends == other._ends and self._text == other._text
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"Names({len(self)} names)"


"""A least-recently-used cache."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator


class LRUCache:
    """A mapping holding at most `capacity` entries.

    - `capacity` must be an int >= 1, otherwise ValueError.
    - `get(key, default=None)` returns the value and marks the key most recently used;
      a missing key returns `default` and changes nothing.
    - `put(key, value)` stores the value and marks the key most recently used. Storing
      a new key into a full cache first evicts the least recently used entry;
      updating an existing key never evicts anything.
    - `on_evict(key, value)`, when given, is called once for each evicted entry,
      after it has been removed (never for `delete` or `clear`).
    - `delete(key)` removes the key and returns True, or returns False if absent.
    - `peek(key, default=None)` returns the value without changing the order.
    - `key in cache`, `len(cache)` and `clear()` never change the order.
    - iterating yields the keys from least to most recently used.
    - `stats()` returns {"hits": .., "misses": .., "evictions": ..}, counted by `get`
      (hits and misses) and by eviction; `clear()` resets nothing.
    """

    def __init__(self, capacity: int, on_evict: Callable[[Hashable, Any], None] | None = None):
        if capacity < 0:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self.on_evict = on_evict
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._hits = self._misses = self._evictions = 0

    def get(self, key: Hashable, default: Any = None) -> Any:
        if key in self._data:
            self._hits += 1
            return self._data[key]
        self._misses += 1
        return default

    def peek(self, key: Hashable, default: Any = None) -> Any:
        return self._data.get(key, default)

    def put(self, key: Hashable, value: Any) -> None:
        if len(self._data) >= self.capacity:
            old_key, old_value = self._data.popitem(last=False)
            self._evictions += 1
            if self.on_evict:
                self.on_evict(old_key, old_value)
        self._data[key] = value
        self._data.move_to_end(key)

    def delete(self, key: Hashable) -> bool:
        return self._data.pop(key, None) is not None

    def clear(self) -> None:
        self._data.clear()

    def stats(self) -> dict[str, int]:
        return {"hits": self._hits, "misses": self._misses, "evictions": self._evictions}

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(list(self._data))

"""A provider that does not answer is said within seconds, and stops the run after three units in a row fail for it.

The relay tells the watch every call it finished. The first agent call that
fails for a provider's reason (failures.call_failure: a refused key, a 404,
a pinned route without an endpoint, no route to the provider, a rate limit) is said on the console at once, with
the cause the relay saw, cleaned of credentials: the user learns of a dead
URL when the first call fails, not when a 600 s turn ends. Each reason is
said once; a call that succeeds afterwards lets it be said again.

Units count as they end: when three in a row end with the same kind of
provider failure (failures.py, phase provider), the run stops starting units
and says why; the units already running finish. `--resume` runs the units
that did not run and those that failed for the provider (they say nothing of
the agent).
"""

from __future__ import annotations

from typing import Any, Callable

from nullius_core.failures import Phase, call_failure, kind_of

IN_A_ROW = 3


class ProviderWatch:
    def __init__(self, provider: str, base_url: str | None, say: Callable[..., None], clean: Callable[[str], str], gated: bool = False):
        self.provider = provider
        self.base_url = base_url
        self._say = say
        self._clean = clean
        self._gated = gated  # a gated benchmark's provider words stay in the call records
        self._said: set[tuple[int, str]] = set()
        self._streak: tuple[str | None, int] = (None, 0)
        self.stop: str | None = None  # why the run stops starting units, once it does

    def call(self, record: dict[str, Any]) -> None:
        """A call the relay finished (on the relay's loop)."""
        if record.get("side") or record.get("refused") or record.get("kind") not in (None, "agent", "capability"):
            return
        status = record.get("status")
        kind = call_failure(record)
        if kind is None:
            if isinstance(status, int) and status < 400:
                self._said.clear()
            return
        reason = f"status {status} ({kind})" if self._gated else self._reason(record)
        if (status, reason) in self._said:
            return
        self._said.add((status, reason))
        self._say("provider", state="failing", provider=self.provider, url=self.base_url, status=status,
                  kind=kind, unit=record.get("route"), reason=reason)

    def _reason(self, record: dict[str, Any]) -> str:
        error = record.get("error")
        text = error.get("message") if isinstance(error, dict) else None
        text = text or record.get("cause") or f"status {record.get('status')}"
        return self._clean(str(text)).splitlines()[0][:300] if str(text).strip() else f"status {record.get('status')}"

    def unit(self, exception_type: str | None) -> None:
        """A unit ended (exception_type None: it did not fail); three in a row of one provider kind stop the run."""
        kind = kind_of(exception_type)
        if kind is None or kind.phase is not Phase.PROVIDER:
            self._streak = (None, 0)
            return
        last, n = self._streak
        n = n + 1 if last == kind.name else 1
        self._streak = (kind.name, n)
        if n >= IN_A_ROW and self.stop is None:
            where = f" at {self.base_url}" if self.base_url else ""
            self.stop = f"{IN_A_ROW} units in a row failed with {kind.name} ({kind.means}) from the provider {self.provider}{where}"

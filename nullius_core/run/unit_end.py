"""How a unit's participant ended, read from its session's own outcome, its route's record and the stop file: every rule in one place.

In order:
0. A replay's call diverged from the recorded one, and was not handed to the
   real model (`ReplayDiverged`, unscored).
1. A benchmark's guard wrote a line in the stop file: the unit is scored and
   marked stopped with that line, whatever the agent's later calls got (a
   refusal of the stop file, a 429) and however its session ended, which the
   refusals explain; a turn past its time limit stays recorded beside the
   score.
2. The participant's own last call that reached the provider (a side model's
   and a refused one left out) failed for the provider's reason
   (failures.call_failure: a 429, a refused key, a 404, no route; a pinned
   route with no endpoint): that kind, outside the agent's doing.
3. That call was refused for the model's context window
   (`ContextWindowExceededError`, the agent's: scored as it left the unit).
4. The session failed and that call was answered 200 with an error in it (a
   failed Responses object): the provider's error (`ApiError`, or its rate
   limit or context window where the error says so).
5. That call's reply hit its output limit with neither text nor a tool call
   (`OutputLengthExceededError`, the agent's: scored).
6. Else the session's own outcome stands.

A gated benchmark's failure the relay's records explain says its status and
class alone, never the provider's words, which may quote the request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from nullius_core.failures import call_failure
from nullius_core.relay.window import refused_for_window

LENGTH_ENDS = frozenset({"length", "max_tokens", "incomplete:max_output_tokens", "MAX_TOKENS"})


@attrs.frozen
class Ending:
    failure: str | None
    message: str | None
    stopped: str | None = None  # a benchmark guard's line in the stop file: the unit is scored, and marked so


def guard_line(stop: Path) -> str | None:
    """The last line a benchmark's guard wrote in the stop file (the relay's own notes start `relay:`)."""
    try:
        lines = stop.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    guard = [line.strip() for line in lines if line.strip() and not line.startswith("relay:")]
    return guard[-1] if guard else None


def divergence_message(call: dict[str, Any]) -> str:
    """A diverged call in a line: its route, its index, the first fields that differ."""
    what = call["diverged"]
    fields = ", ".join(d["path"] for d in what.get("diff", [])[:5]) or what.get("why", "")
    more = what.get("differing", 0) - min(5, len(what.get("diff", [])))
    return f"replay diverged at call {what.get('index')} of route {call.get('route')}: {fields}" + (f" and {more} more" if more > 0 else "")


def own_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The participant's own calls that reached the provider: not a side model's, not one the stop file refused."""
    return [c for c in calls if c.get("kind", "agent") == "agent" and not c.get("side") and not c.get("refused")]


def ending(failure: str | None, message: str | None, calls: list[dict[str, Any]], stop: Path | None, gated: bool,
           who: str = "agent") -> Ending:
    """`stop`: the route's stop file, None where a guard's stop scores nothing (an answerer's failed answer has no answer)."""
    diverged = next((c for c in calls if "diverged" in c and not c.get("live")), None)
    if diverged is not None:  # a replay's divergence ends the unit, whatever the agent made of its 409
        return Ending("ReplayDiverged", divergence_message(diverged))
    guard = guard_line(stop) if stop is not None else None
    if guard is not None:
        # the refused calls explain how the session ended (an exit, an error, a last 429); its own time limit does not
        kept = failure if failure == "AgentTimeoutError" else None
        return Ending(kept, message if kept else None, stopped=guard)
    own = own_calls(calls)
    if not own:
        return Ending(failure, message)
    last = own[-1]
    kind = call_failure(last)
    if kind is None and refused_for_window(last.get("status"), last.get("error")):
        kind = "ContextWindowExceededError"
    if kind is None and failure is not None and last.get("status") == 200 and last.get("error") is not None:
        kind = _in_band(last["error"])
    if kind is None and last.get("empty") and last.get("end") in LENGTH_ENDS:
        kind = "OutputLengthExceededError"
    if kind is None:
        return Ending(failure, message)
    return Ending(kind, said(kind, last, gated, who))


def _in_band(error: dict[str, Any]) -> str:
    text = " ".join(str(error.get(k) or "") for k in ("code", "type", "message")).lower()
    if "rate_limit" in text or "rate limit" in text:
        return "ApiRateLimitError"
    return "ContextWindowExceededError" if refused_for_window(200, error) else "ApiError"


def said(kind: str, call: dict[str, Any], gated: bool, who: str = "agent") -> str:
    """What the record says of a failed call: its status, and unless gated the provider's (or the relay's) words."""
    status = call.get("status")
    text = f"the {who}'s last model call got {status}"
    if kind == "ApiProviderRouteError":
        order = (call.get("routing_sent") or {}).get("order") or []
        text += f": no endpoint of its pin ({', '.join(order)}) serves {call.get('model_sent')}"
    if gated:
        return f"{text} ({kind}; gated: the provider's words are kept in the trial's call records only)"
    error = call.get("error")
    words = error.get("message") if isinstance(error, dict) else call.get("cause")
    return f"{text}: {words}" if words else text

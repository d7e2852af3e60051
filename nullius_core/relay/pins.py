"""Serving pins: the providers that may answer a model where one provider routes a model to several (OpenRouter).

A pin is a model (as the relay sends it) and its providers' slugs, tried in
that order and no other: the relay puts `provider: {order, allow_fallbacks:
false}` on each request it sends as that model, on every route. Pins come
from `--served-by [MODEL=]SLUG[,SLUG...]` (a run's, `relay serve`'s) and from
a benchmark's definition (`setups.original.pin` for the Original's models,
`score.judge.pin` for its official judge), which win for their model.

Whether a pin held is read from what each answered call's reply says served
it: a name reads as a slug by its case and spaces alone (`DeepInfra` is
`deepinfra`), so a name that is not its slug (`Google` for `google-vertex`)
reads as unknown, never as a miss, and a miss is a name that shares nothing
with the pin's slugs. A slug's variant (`deepinfra/fp8`) is never told apart:
held names a provider, not its endpoint.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)?$")
SOURCES = ("--served-by", "setups.original.pin", "score.judge.pin")


class PinProblem(Exception):
    """A pin that cannot be: its message says which and why, in one line."""


@attrs.frozen
class Pin:
    order: tuple[str, ...]
    source: str = "--served-by"  # one of SOURCES

    def routing(self) -> dict[str, Any]:
        """The routing object sent in place of the caller's own."""
        return {"order": list(self.order), "allow_fallbacks": False}

    def record(self) -> dict[str, Any]:
        return {"order": list(self.order), "source": self.source}


def slug_problem(slugs: Iterable[str]) -> str | None:
    """What is wrong with a list of slugs, or None."""
    order = list(slugs)
    bad = [s for s in order if not isinstance(s, str) or not SLUG.match(s)]
    if bad or not order:
        return f"{bad[0] if bad else 'nothing'} is not a provider slug (lowercase, such as anthropic or deepinfra/fp8)"
    if len(set(order)) != len(order):
        return "a slug is given twice"
    return None


def parse(values: Iterable[str], default_model: str | None) -> dict[str, Pin]:
    """`--served-by` values as pins by model; the model is `default_model` where a value names none."""
    pins: dict[str, Pin] = {}
    for value in values:
        target, sep, slugs = value.rpartition("=")
        target = target if sep else (default_model or "")
        if not target:
            raise PinProblem(f"--served-by {value!r}: name the model (MODEL=SLUG) or give --model")
        order = [s.strip() for s in slugs.split(",")]
        problem = slug_problem(order)
        if problem:
            raise PinProblem(f"--served-by {value!r}: {problem}")
        if target in pins:
            raise PinProblem(f"--served-by: model {target!r} is pinned twice")
        pins[target] = Pin(tuple(order))
    return pins


def joined(given: Mapping[str, Pin], definition: Mapping[str, Pin]) -> dict[str, Pin]:
    """A run's pins: the command line's, with the definition's winning for their model."""
    return {**given, **definition}


def check_provider(provider: str, routes_to_several: bool) -> None:
    """A pin needs a provider that routes one model to several providers."""
    if not routes_to_several:
        raise PinProblem(f"--served-by: provider {provider!r} routes no model to several providers (only openrouter does)")


def check(pins: Mapping[str, Pin], provider: str, routes_to_several: bool, called: Iterable[str]) -> None:
    """Refuse pins the run cannot honour: a provider that routes no model to several, a model the run never sends."""
    if not pins:
        return
    check_provider(provider, routes_to_several)
    sent = sorted(set(called))
    for model, pin in pins.items():
        if model not in sent:
            raise PinProblem(f"{pin.source}: the run never sends {model!r} (it sends {', '.join(map(repr, sent)) or 'no model'})")


def as_slug(name: str) -> str:
    """A provider's name as a slug, by its case and spaces alone: `DeepInfra` -> `deepinfra`, `Google AI Studio` -> `google-ai-studio`."""
    return re.sub(r"\s+", "-", name.strip().lower())


def reads(name: str | None, order: Iterable[str]) -> bool | None:
    """Whether a reply's serving provider is one of a pin's slugs: True, False (it shares nothing with them), None (cannot tell)."""
    if not name:
        return None
    slug = as_slug(name)
    bases = {s.split("/", 1)[0] for s in order}
    if slug in bases:
        return True
    words = set(re.split(r"[-_.]+", slug))
    if any(words & set(re.split(r"[-_.]+", base)) for base in bases):
        return None  # `Google` for `google-vertex`: a name that may be another slug's
    return False


def answered(call: Mapping[str, Any]) -> bool:
    """A call the provider answered: a 200 holding no error (an error under a 200 makes it a failed one)."""
    return call.get("status") == 200 and not call.get("refused") and call.get("error") is None


def served(calls: Iterable[Mapping[str, Any]], pins: Mapping[str, Pin]) -> dict[str, Any]:
    """Who served a unit's answered calls, and for each pinned model how many it answered and whether its pin held."""
    mine = [c for c in calls if answered(c)]
    by = Counter(str(c["served_by"]) for c in mine if c.get("served_by"))
    out: dict[str, Any] = {"answered": len(mine), "by_provider": dict(sorted(by.items()))}
    unnamed = sum(1 for c in mine if not c.get("served_by"))
    if unnamed:
        out["unnamed"] = unnamed
    if pins:
        out["pinned"] = {}
        for model, pin in pins.items():
            verdicts = [reads(c.get("served_by"), pin.order) for c in mine if c.get("model_sent") == model]
            out["pinned"][model] = {**pin.record(), "answered": len(verdicts), "held": held(verdicts)}
    return out


def held(verdicts: list[bool | None]) -> bool | None:
    """Every answer by a pinned provider: True; one by another: False; none, or one that cannot be told: None."""
    if any(v is False for v in verdicts):
        return False
    return True if verdicts and all(v is True for v in verdicts) else None


def added(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Several units' `served`, summed: a pin held where every part that answered on its model held."""
    given = [p for p in parts if p]
    if not given:
        return None
    by: Counter[str] = Counter()
    for part in given:
        by.update(part.get("by_provider") or {})
    out: dict[str, Any] = {"answered": sum(p.get("answered", 0) for p in given), "by_provider": dict(sorted(by.items()))}
    unnamed = sum(p.get("unnamed", 0) for p in given)
    if unnamed:
        out["unnamed"] = unnamed
    pinned: dict[str, dict[str, Any]] = {}
    verdicts: dict[str, list[bool | None]] = {}
    for part in given:
        for model, figure in (part.get("pinned") or {}).items():
            total = pinned.setdefault(model, {"order": figure.get("order"), "source": figure.get("source"), "answered": 0})
            total["answered"] += figure.get("answered", 0)
            if figure.get("order") != total["order"]:  # a merge forced over different pins: no one pin to hold
                verdicts.setdefault(model, []).append(None)
            elif figure.get("answered"):
                verdicts.setdefault(model, []).append(figure.get("held"))
    if pinned:
        out["pinned"] = {model: {**figure, "held": held(verdicts.get(model, []))} for model, figure in pinned.items()}
    return out

"""No agent · Original: the upstream's own answerer (the driver's `answer` op) on the run's model, as a run like any other.

A benchmark declares `setups`: `original` (the models its paper names,
`served_as` for a name the provider serves under another, `providers` and
their prefixes) and `model` (`runs_as`, the model the upstream is told while
the relay sends the one chosen). `nullius run BENCH original --model M`
picks the driver method: `original` when M is one of the original's models
(or it names none), else `model`; anything else is refused before any unit.
The answerer's calls go through the unit's relay route as the participant's
calls; `units`, `answer` and `score` are sent `setup`, and the job and each
trial record `standard.setup`.
"""

from __future__ import annotations

import attrs

from nullius_core.definitions import ResolvedBenchmark
from nullius_core.definitions.setups import original_method
from nullius_core.relay.upstream import Upstream

ORIGINAL = "original"  # the participant that is the upstream's own answerer


@attrs.frozen(kw_only=True)
class SetupChoice:
    """Which driver method runs, the model asked, the name the upstream is told, the model the relay sends."""

    name: str  # "original" or "model"
    asked: str
    told: str  # what the driver passes to the upstream as its model
    sent: str  # what the relay sends every call as
    comparable_with_paper: bool

    def record(self) -> dict[str, object]:
        return {"name": self.name, "model_asked": self.asked, "model_sent": self.sent, "model_told": self.told,
                "comparable_with_paper": self.comparable_with_paper}

    def request(self) -> dict[str, str]:
        """What the driver's ops are sent as `setup`."""
        return {"name": self.name, "model": self.told}


@attrs.frozen(kw_only=True)
class PreparedOriginal:
    """The upstream's answerer for a run: its setup and where the relay forwards its calls."""

    setup: SetupChoice
    upstream: Upstream
    turn_seconds: float | None  # the original setup's own limit per answer


def choose(bench: ResolvedBenchmark, model: str | None, provider: str, refused: type[Exception]) -> tuple[SetupChoice, float | None]:
    setups = bench.standard.setups or {}
    original, substitute = setups.get("original"), setups.get("model")
    if original is None and substitute is None:
        raise refused(f"{bench.ref} declares no setups: its upstream's own answerer is not offered (run an agent, or a control)")
    model = model or (original.default if original is not None else None)
    if not model:
        raise refused(f"{bench.ref} original needs --model (its setups name no default)")
    method = original_method(bench.standard, model)
    if method == "original" and original is not None:
        if original.providers is not None and provider not in original.providers:
            raise refused(f"{bench.ref}'s original setup is served by {', '.join(sorted(original.providers))}, not {provider!r}")
        prefix = (original.providers or {}).get(provider, "")
        sent = prefix + (original.served_as or {}).get(model, model)
        turn = float(original.turn_seconds) if original.turn_seconds else None
        return SetupChoice(name="original", asked=model, told=model, sent=sent, comparable_with_paper=bool(original.models)), turn
    if method is None or substitute is None:
        models = ", ".join(original.models or []) if original is not None else ""
        raise refused(f"--model {model}: {bench.ref}'s original setup runs {models}, and it has no model setup to run another")
    return SetupChoice(name="model", asked=model, told=substitute.runs_as, sent=model, comparable_with_paper=False), None

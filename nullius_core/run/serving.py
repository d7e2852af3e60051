"""A run's serving pins: `--served-by` and the definition's own, checked against what the run calls, before any unit.

The definition's pins (`setups.original.pin` for the Original's models,
`score.judge.pin` for its official judge) hold on a provider that routes a
model to several (OpenRouter) and win over `--served-by` for their model;
on another provider there is nothing to pin and they are left out, as the
run's config says. A pin follows the model sent: a model the agent shares
with the judge goes to the judge's providers on every route. `--served-by`
is refused before any unit on a provider that routes no model to several,
for a model the run never sends (a control calls none but its judge's), and
for a malformed or repeated slug.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nullius_core.contracts.refused import RunRefused
from nullius_core.relay.pins import Pin, PinProblem, check, joined, parse

if TYPE_CHECKING:
    from nullius_core.run.prepare import Prepared
    from nullius_core.run.spec import RunSpec


def called_models(prepared: Prepared, model: str | None) -> set[str]:
    """Every model the run's relay sends: the participant's (as sent), its side models, its simulator's and judge's."""
    out = {voice.model for voice in prepared.voices.values()}
    agent = prepared.agent
    if agent is not None and getattr(agent, "upstream", None) is not None and model:
        out.add(model)
        wiring = agent.resolved.model
        out.update(wiring.side_models if wiring is not None else ())
    if prepared.original is not None:
        out.add(prepared.original.setup.sent)
    return out


def definition_pins(prepared: Prepared) -> dict[str, Pin]:
    """The benchmark's own pins, by the model the relay sends."""
    standard = prepared.bench.standard
    out: dict[str, Pin] = {}
    original = (standard.setups or {}).get("original")
    chosen = prepared.original.setup if prepared.original is not None else None
    if original is not None and original.pin and chosen is not None and chosen.name == "original" and chosen.asked in original.pin:
        out[chosen.sent] = Pin(tuple(original.pin[chosen.asked]), "setups.original.pin")
    judge = standard.score.judge if standard.score is not None else None
    voice = prepared.voices.get("judge")
    if judge is not None and judge.pin and voice is not None and voice.model == voice.official:
        out[voice.model] = Pin(tuple(judge.pin), "score.judge.pin")
    return out


def run_pins(spec: RunSpec, prepared: Prepared) -> dict[str, Pin]:
    """The pins every relay of the run puts on the models it sends; refused (RunRefused) before any unit."""
    upstream = prepared.relay_upstream
    try:
        given = parse(spec.served_by, spec.model)
        if upstream is None:
            if given:
                raise PinProblem(f"--served-by: {spec.participant} calls no model here (no relay runs)")
            return {}
        own = definition_pins(prepared) if upstream.provider.routes_to_several else {}
        pins = joined(given, own)
        check(given, upstream.provider.name, upstream.provider.routes_to_several, called_models(prepared, spec.model))
        return pins
    except PinProblem as exc:
        raise RunRefused(str(exc)) from None

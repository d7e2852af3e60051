"""The setup a run is and the options that apply to it (nullius_core/definitions/setups.py): the rules the run and the app's builder share."""

from __future__ import annotations

from nullius_core.definitions import Option, Standard, structure
from nullius_core.definitions.setups import applying, original_method


def standard(**setups) -> Standard:
    raw = {"datasets": {"test": {"units": 1}}, "kit": {"port": "agent.task/v1", "basic": ["a"]}, "setups": setups}
    return structure(raw, Standard)


def test_the_original_runs_its_models_and_the_model_setup_any_other():
    both = standard(original={"models": ["paper-1"]}, model={"runs_as": "paper-1"})
    assert original_method(both, "paper-1") == "original"
    assert original_method(both, None) == "original"  # the setup's default
    assert original_method(both, "mine") == "model"
    assert original_method(standard(original={"models": ["paper-1"]}), "mine") is None
    assert original_method(standard(original={}), "anything") == "original"  # no models named: any model


def test_an_option_applies_by_its_setups_and_its_when_and_one_dropped_drops_those_that_name_it():
    declared = {
        "mode": Option(summary="m", values=["fast", "slow"], default="fast"),
        "depth": Option(summary="d", values=["1", "2"], default="1", when={"mode": ["slow"]}),
        "deeper": Option(summary="e", values=["x"], default="x", when={"depth": ["2"]}),
        "temperature": Option(summary="t", pattern="[0-9.]+", setups=["original"]),
    }
    held, why = applying(declared, {"mode": "slow", "depth": "2", "deeper": "x", "temperature": "0"}, "yours", "b")
    assert held == {"mode": "slow", "depth": "2", "deeper": "x"}
    assert "setting of the original setup(s), not of this run's (yours)" in why["temperature"]
    held, why = applying(declared, {"mode": "fast", "depth": "2", "deeper": "x"}, "yours", "b")
    assert held == {"mode": "fast"}
    assert why["depth"] == "option 'depth' of b applies only when mode is slow (it is 'fast')"
    assert why["deeper"] == "option 'deeper' of b applies only when depth is 2 (it does not apply)"

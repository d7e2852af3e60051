"""The viewer names every outcome the core's table has: a trial of a new outcome is never shown as "cannot be read"."""

from nullius_app.job_views import OUTCOMES as SHOWN
from nullius_core.failures import OUTCOMES


def test_the_viewer_has_a_label_for_every_outcome_of_the_core():
    assert set(OUTCOMES) <= set(SHOWN), f"outcomes the viewer cannot show: {sorted(set(OUTCOMES) - set(SHOWN))}"


def test_every_outcome_the_viewer_colours_has_its_colour():
    from pathlib import Path

    import nullius_app

    css = (Path(nullius_app.__file__).parent / "static" / "viewer.css").read_text()
    for outcome in OUTCOMES:
        assert f".dot.o-{outcome}" in css, f"no dot colour for {outcome!r}"
        assert f"svg .cell.o-{outcome}" in css, f"no grid colour for {outcome!r}"

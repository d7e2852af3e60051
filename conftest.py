"""The whole suite's (tests/ and plugins/*/tests): how it is shared between xdist's workers, and installs made before it.

`./dev test` runs the suite on pytest-xdist (`--dist loadgroup`). Each test
module is one unit of work, so its module-scoped worlds (an agent installed
and proven, a job run once and read by every test) are made once, on one
worker; modules that share a session-scoped world name one group
(`pytestmark = pytest.mark.xdist_group("name")`) and go to one worker
together. Units start longest first, by the times the last run on this
machine recorded (else tests/durations.json), so that the two workers end
together instead of one waiting on the last long module.

`./dev installs` (which `./dev test` runs first) makes every third-party
install the suite needs into the shared STANDARD_DIR; a test asking for that
folder fails, naming the step, when the installs are not there or were made
from other pins (tests/installs.py), instead of paying for one itself.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from nullius_core.testing.pytest_plugin import INSTALLS_VARIABLE

ROOT = Path(__file__).resolve().parent
RECORDED = Path.home() / ".cache" / "nullius-tests" / "durations.json"  # this machine's last run, per unit
SHIPPED = ROOT / "tests" / "durations.json"  # a run's, committed: the order on a machine that has run nothing yet


@pytest.fixture(scope="session")
def nullius_installs(nullius_installs: Path) -> Path:
    if os.environ.get(INSTALLS_VARIABLE) != "fresh":  # a fresh folder is the session's own, made as it goes
        from tests.installs import need

        need()
    return nullius_installs


def unit_of(item: pytest.Item) -> str:
    """The item's unit of work: its module's shared group if it names one, else its module's file."""
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name"))
    return item.nodeid.split("::", 1)[0]


def _times() -> dict[str, float]:
    for source in (RECORDED, SHIPPED):
        try:
            return {str(k): float(v) for k, v in json.loads(source.read_text()).items()}
        except (OSError, ValueError, AttributeError):
            continue
    return {}


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    times = _times()
    units: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        unit = unit_of(item)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(unit))
        units[unit].append(item)
    # longest first; a unit never timed counts as long (it may be new and slow); a unit's own order is kept
    default = max(times.values(), default=0.0)
    order = sorted(units, key=lambda unit: -times.get(unit, default))
    items[:] = [item for unit in order for item in units[unit]]


class _Timing:
    """Sums each unit's time from the reports the workers send back, and records them at the session's end."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid.split("::", 1)[0].split("@", 1)[0]] += report.duration
        group = report.nodeid.rsplit("@", 1)[1] if "@" in report.nodeid else None
        if group is not None and group != report.nodeid.split("::", 1)[0]:
            self.seconds[group] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus not in (0, 1) or not self.seconds:
            return  # an interrupted run's times are not a run's
        recorded = _times() if RECORDED.exists() else {}
        recorded.update({unit: round(seconds, 1) for unit, seconds in self.seconds.items()})
        RECORDED.parent.mkdir(parents=True, exist_ok=True)
        RECORDED.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) sees every report
        config.pluginmanager.register(_Timing(), "nullius-unit-timing")

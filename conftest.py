"""The whole suite's (tests/ and plugins/*/tests): how it is shared between xdist's workers, and installs made before it.

`./dev test` runs the suite on pytest-xdist with `--dist loadfile`, which
here is xdist's own loadfile with one addition: the files of SHARED, which
share a session-scoped world, are one unit. So each unit's worlds (an agent
installed and proven once a module, the report's jobs once a session) are
made once, on one worker. Units start longest first, by the times the last
run on this machine recorded (else tests/durations.json), so that the
workers end together instead of one waiting on a long module started last.

`./dev installs` (which `./dev test` runs first) makes every third-party
install the suite needs into the shared STANDARD_DIR; a test asking for that
folder fails, naming the step, when the installs are not there or were made
from other pins (tests/installs.py), instead of paying for one itself.
"""

from __future__ import annotations

import json
import os
import resource
import signal
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from nullius_core.testing.pytest_plugin import INSTALLS_VARIABLE

ROOT = Path(__file__).resolve().parent
RECORDED = Path.home() / ".cache" / "nullius-tests" / "durations.json"  # this machine's last run, per unit
RECORDED_CPU = RECORDED.with_name("cpu.json")  # and the CPU each unit took, its processes' included: where to cut
SHIPPED = ROOT / "tests" / "durations.json"  # a run's, committed: the order on a machine that has run nothing yet

# Files whose tests share a session-scoped world: each group runs on one worker, its world made once.
SHARED = {
    "app-viewer-world": ("plugins/nullius-app/tests/test_viewer.py", "plugins/nullius-app/tests/test_compare_page.py"),
    "report-jobs": ("plugins/nullius-report/tests/test_calibrate.py", "plugins/nullius-report/tests/test_compare.py",
                    "plugins/nullius-report/tests/test_export.py", "plugins/nullius-report/tests/test_otel.py"),
    "rsi-world": ("plugins/nullius-rsi/tests/test_improve_front.py", "plugins/nullius-rsi/tests/test_improve_rollout.py"),
}
GROUP_OF = {file: group for group, files in SHARED.items() for file in files}


def unit_of(nodeid: str) -> str:
    """A test's unit of work: its file's shared group, else its file."""
    file = nodeid.split("::", 1)[0]
    return GROUP_OF.get(file, file)


@pytest.fixture(scope="session")
def nullius_installs(nullius_installs: Path) -> Path:
    if os.environ.get(INSTALLS_VARIABLE) != "fresh":  # a fresh folder is the session's own, made as it goes
        from tests.installs import need

        need()
    return nullius_installs


def _times(*sources: Path) -> dict[str, float]:
    for source in sources or (RECORDED, SHIPPED):
        try:
            return {str(k): float(v) for k, v in json.loads(source.read_text()).items()}
        except (OSError, ValueError, AttributeError):
            continue
    return {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Units longest first (a unit never timed counts as the longest: it may be new and slow); a unit keeps its own order."""
    times = _times()
    units: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        units[unit_of(item.nodeid)].append(item)
    default = max(times.values(), default=0.0)
    order = sorted(units, key=lambda unit: -times.get(unit, default))
    items[:] = [item for unit in order for item in units[unit]]


@pytest.hookimpl(optionalhook=True)  # `pytest -p no:xdist` runs the suite in one process, without this hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, a SHARED group being one file; the work queue in collection order (longest first)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # xdist would order the units by their number of tests
    return ByUnit(config, log)


def _cpu_seconds() -> float:
    """CPU of this process and of every child it has reaped (a child's own reaped children included)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_CPU_AT_START] = _cpu_seconds()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when == "teardown" and _CPU_AT_START in item.stash:  # the test's whole CPU, its fixtures' included
        report.user_properties.append(("cpu_seconds", _cpu_seconds() - item.stash[_CPU_AT_START]))
    return report


_CPU_AT_START = pytest.StashKey[float]()


class _Timing:
    """Sums each unit's wall and CPU time from the reports the workers send back, and records them when the session ends."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[unit_of(report.nodeid)] += report.duration
        self.cpu[unit_of(report.nodeid)] += sum(v for k, v in report.user_properties if k == "cpu_seconds")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus not in (0, 1) or not self.seconds:
            return  # an interrupted run's times are not a whole run's
        for file, figures in ((RECORDED, self.seconds), (RECORDED_CPU, self.cpu)):
            recorded = _times(file) if file.exists() else {}
            recorded.update({unit: round(seconds, 1) for unit, seconds in figures.items()})
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    # A suite started in the background by a script (`./dev test &`, nohup) inherits SIGINT ignored, and so would
    # every process a test starts: the tests of Ctrl-C (a run, fidelity, nanorsi) would send a signal nobody hears.
    # A handler of Python's own is not inherited across exec: the tests' processes start with SIGINT's default.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) sees every report
        config.pluginmanager.register(_Timing(), "nullius-unit-timing")

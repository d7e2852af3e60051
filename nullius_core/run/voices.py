"""The models a benchmark asks besides the participant: its simulated user and its judge.

Each is asked on a route of the unit's own relay (`<unit>-simulator`,
`<unit>-judge`), recorded beside the agent's calls (`.work/relay-<role>/`,
copied to the trial's `simulator/` and `judge/`), never counted as the
agent's: the trial's `standard.routes` and the job's say what each spent. The driver is handed each route as
`{model, base_url, key}`: the simulator with every `turn`, the judge with
every `turn` and `score`. The model is the definition's (`simulator.model`,
`score.judge.model`) unless the run asks another (`--simulator-model`,
`--judge-model`); the run records which, and whether it is the official one.

`--like-leaderboard` sets what the benchmark's leaderboard fixes besides the
ranked model (its simulator and judge, its options, at least its attempts),
refusing a flag that contradicts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nullius_core.definitions import ResolvedBenchmark
from nullius_core.jobs.layout import TrialDir
from nullius_core.relay.records import keep_record
from nullius_core.relay.seal import seal

if TYPE_CHECKING:
    from nullius_core.contracts.backend import RelayRoutes
    from nullius_core.run.spec import RunSpec

ROLES = ("simulator", "judge")
FLAGS = {"simulator": "--simulator-model", "judge": "--judge-model"}


@attrs.frozen(kw_only=True)
class Voice:
    role: str  # "simulator" or "judge"
    model: str  # every call on its route goes as this model
    official: str | None  # the definition's

    def record(self) -> dict[str, Any]:
        return {"model": self.model, "official_model": self.official, "official": self.model == self.official}


def officials(bench: ResolvedBenchmark, options: dict[str, str] | None = None) -> dict[str, str | None]:
    """The definition's simulator and judge; with the run's `options`, a judge whose `when` they miss is none."""
    standard = bench.standard
    judge = standard.score.judge if standard.score is not None else None
    if judge is not None and options is not None and any(options.get(k) not in v for k, v in (judge.when or {}).items()):
        judge = None
    return {"simulator": standard.simulator.model if standard.simulator is not None else None,
            "judge": judge.model if judge is not None else None}


def voices_for(bench: ResolvedBenchmark, spec: RunSpec, options: dict[str, str], refused: type[Exception]) -> dict[str, Voice]:
    """The run's simulator and judge; a control never asks the simulator (it holds no conversation)."""
    if spec.judge_model and officials(bench)["judge"] and not officials(bench, options)["judge"]:
        raise refused(f"--judge-model {spec.judge_model}: {bench.ref}'s judge is not asked with these options "
                      f"(only with {bench.standard.score.judge.when})")  # type: ignore[union-attr]
    official = officials(bench, options)
    asked = {"simulator": spec.simulator_model, "judge": spec.judge_model}
    out: dict[str, Voice] = {}
    for role in ROLES:
        if asked[role] and not official[role]:
            raise refused(f"{FLAGS[role]} {asked[role]}: {bench.ref} asks no {role} (its standard.json declares none)")
        model = asked[role] or official[role]
        if model is None or (role == "simulator" and spec.control is not None):
            continue
        out[role] = Voice(role=role, model=model, official=official[role])
    return out


def like_leaderboard(spec: RunSpec, bench: ResolvedBenchmark, given: set[str], refused: type[Exception]) -> RunSpec:
    """`spec` as the leaderboard runs it; `given`: the flags the command line set (`repeat`, `simulator_model`, ...)."""
    board = bench.standard.leaderboard
    if board is None:
        raise refused(f"--like-leaderboard: {bench.ref} declares no leaderboard")
    changes: dict[str, Any] = {}
    for role, value in (("simulator", board.simulator), ("judge", board.judge)):
        field = f"{role}_model"
        have = getattr(spec, field)
        if value is not None and have is not None and have != value:
            raise refused(f"--like-leaderboard runs the leaderboard's {role} {value}; {FLAGS[role]} {have} contradicts it")
        if value is not None:
            changes[field] = value
    options = dict(spec.bench_options)
    for name, value in (board.bench_options or {}).items():
        if name in options and options[name] != value:
            raise refused(f"--like-leaderboard sets --bench-option {name}={value}; {name}={options[name]} contradicts it")
        options[name] = value
    changes["bench_options"] = options
    if board.repeat is not None and spec.repeat < board.repeat:
        if "repeat" in given:
            raise refused(f"--like-leaderboard runs each unit at least {board.repeat} times; --repeat {spec.repeat} is fewer")
        changes["repeat"] = board.repeat
    return attrs.evolve(spec, like_leaderboard=True, **changes)


def route_name(trial: str, role: str) -> str:
    return f"{trial}-{role}"


def record_folder(trial: TrialDir, role: str) -> Path:
    """The route's own record, beside the agent's `.work/relay` and never in it."""
    return trial.work / f"relay-{role}"


def open_routes(relay: RelayRoutes, trial: TrialDir, voices: dict[str, Voice], call_seconds: float | None) -> dict[str, dict[str, str]]:
    """The unit's simulator and judge routes: what the driver is handed of each."""
    out = {}
    for role, voice in voices.items():
        name = route_name(trial.name, role)
        made = relay.add_route(name, record_folder(trial, role), kind=role, model=voice.model, call_seconds=call_seconds)
        out[role] = {"model": voice.model, "base_url": relay.url(name), "key": made.token}
    return out


async def close_routes(relay: RelayRoutes, trial: TrialDir, roles: list[str]) -> None:
    """Each route's calls recorded, then the route gone (its key opens nothing after the unit); its record kept in `<role>/`."""
    for role in roles:
        await relay.retire(route_name(trial.name, role))
        seal(record_folder(trial, role))
        keep_record(record_folder(trial, role), trial.path / role)

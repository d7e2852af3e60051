"""`nullius prompt BENCH UNIT...`: the prompt each unit's `setup` gives, as a run's agent would get it, with no run.

The benchmark's driver is prepared as a control's run prepares it and sent
`setup` for each unit in a scratch workspace of its own (an empty git
repository, removed after), so a tool that needs a task's instruction
(`nullius improve`'s task manifest) reads the benchmark's own words.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from nullius_core import aio
from nullius_core.contracts.backend import init_repository
from nullius_core.contracts.driver import OP_SECONDS, DriverError
from nullius_core.run.lone_driver import prepared_driver
from nullius_core.run.prepare import Prepared, RunRefused
from nullius_core.run.progress import Progress
from nullius_core.run.spec import RunSpec
from nullius_core.session import Session


def unit_prompts(session: Session, spec: RunSpec, units: list[str], progress: Progress | None = None) -> dict[str, str]:
    """{unit: its setup's prompt}; RunRefused naming a unit the dataset does not have, or a setup that fails."""
    with prepared_driver(session, spec, "prompt", progress) as prepared:
        return aio.run(_prompts(prepared, units))


async def _prompts(prepared: Prepared, units: list[str]) -> dict[str, str]:
    driver = prepared.runner.factory(prepared.launch)
    try:
        known = (await driver.call("units", {"dataset": prepared.dataset_name}, OP_SECONDS["units"])).get("units") or []
        missing = [u for u in units if u not in known]
        if missing:
            raise RunRefused(f"{prepared.bench.ref}: no unit {', '.join(missing)} in dataset {prepared.dataset_name}")
        out = {}
        with tempfile.TemporaryDirectory(prefix="nullius-prompt-") as scratch:
            for unit in units:
                workspace = Path(scratch) / unit
                workspace.mkdir()
                init_repository(workspace)
                request = {"unit": unit, "dataset": prepared.dataset_name, "dir": str(workspace), "verifier": str(Path(scratch) / f"{unit}.verifier")}
                reply = await driver.call("setup", request, OP_SECONDS["setup"])
                prompt = reply.get("prompt") if isinstance(reply.get("prompt"), str) else reply.get("question")
                if not isinstance(prompt, str):
                    raise RunRefused(f"{prepared.bench.ref}: setup of {unit} replied without a prompt string")
                out[unit] = prompt
        return out
    except DriverError as exc:
        raise RunRefused(f"{prepared.bench.ref}: {exc}") from None
    finally:
        await asyncio.shield(driver.close())

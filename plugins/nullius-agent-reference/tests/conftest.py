"""The `agent_run` fixture; the harness is in reference_harness.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from reference_harness import running_agent


@pytest.fixture
def agent_run(tmp_path: Path, fake_model: Any):
    """`agent_run(scenario, permit=..., env=...)`: runs `async scenario(agent)` against a fresh agent."""

    def run(scenario: Any, **kwargs: Any) -> Any:
        async def main() -> Any:
            async with running_agent(tmp_path, fake_model, **kwargs) as agent:
                return await asyncio.wait_for(scenario(agent), 30)

        return asyncio.run(main())

    return run

"""The driver's side of a conversation: each `turn` asked, the simulated user's opening, a restart opened as the first session was.

The driver holds the conversation (a simulated user, a scripted one, the
upstream's own loop); the agent's protocol adapter asks it for the next user
message after each agent turn. With a simulator, the conversation opens with a
`turn` on the empty transcript, whose message follows setup's prompt and a
blank line; a restarted session opens the same way.
"""

from __future__ import annotations

import asyncio
from typing import Any

from nullius_core.contracts.backend import UnitPlace
from nullius_core.contracts.driver import OP_SECONDS, Driver, DriverError
from nullius_core.jobs.layout import TrialDir
from nullius_core.links import take_out


class TurnError(Exception):
    """The driver could not say the conversation's next turn: the unit's error, not the agent's."""


class DriverTurns:
    def __init__(self, driver: Driver, base: dict[str, Any], place: UnitPlace, trial: TrialDir, prompt: str,
                 voices: dict[str, dict[str, str]] | None):
        self._driver, self._base, self._place, self._trial = driver, base, place, trial
        self._prompt = prompt  # setup's
        self._voices = voices or {}
        self.simulated = "simulator" in self._voices

    async def first_message(self) -> str:
        """The agent's first message: setup's prompt, and with a simulator the user's opening after a blank line."""
        if not self.simulated:
            return self._prompt
        opening = await self([])
        if not isinstance(opening, str):
            raise TurnError("driver op 'turn' on the empty transcript replied done or restart: the simulated user never spoke")
        return self._opened(opening)

    async def __call__(self, transcript: list[dict[str, str]]) -> str | None | tuple[str, str]:
        """The next user message; None when the conversation is done; ("restart", first message) for a new session."""
        await asyncio.to_thread(take_out, self._place.workspace, self._trial.verifier / "links.txt")  # the driver may read the workspace
        request = {**self._base, "dir": str(self._place.workspace), "transcript": transcript, **self._voices}
        try:
            reply = await self._driver.call("turn", request, OP_SECONDS["turn"])
        except DriverError as exc:
            raise TurnError(str(exc)) from None
        if reply.get("done"):
            return None
        if isinstance(reply.get("restart"), str):
            return ("restart", self._opened(reply["restart"]) if self.simulated else reply["restart"])
        message = reply.get("message")
        if not isinstance(message, str):
            raise TurnError("driver op 'turn' replied with neither message, done nor restart")
        return message

    def _opened(self, message: str) -> str:
        return f"{self._prompt}\n\n{message}" if self._prompt else message

"""The fake server on its own event loop in a daemon thread, for synchronous tests and subprocesses.

    with running_fake_model({"rules": [...]}) as fake:
        subprocess.run([...], env={"OPENAI_BASE_URL": fake.openai_base_url, ...})
        assert fake.requests[-1].body["model"] == "..."
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from nullius_core.testing.fake_model.loading import ScriptLike, as_script
from nullius_core.testing.fake_model.request import RecordedRequest
from nullius_core.testing.fake_model.script import Script
from nullius_core.testing.fake_model.server import DEFAULT_MAX_REQUESTS, FakeModelServer

T = TypeVar("T")


class SyncFakeModel:
    """A started fake server driven from another thread. `stop()` ends the thread and its loop."""

    def __init__(
        self,
        script: ScriptLike = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        record_path: str | Path | None = None,
        max_requests: int = DEFAULT_MAX_REQUESTS,
    ):
        self.server = FakeModelServer(script, record_path=record_path, max_requests=max_requests)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="nullius-fake-model", daemon=True)
        self._thread.start()
        try:
            self._call(self.server.start(host, port))
        except BaseException:
            self._end_loop()
            raise

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _end_loop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def stop(self) -> None:
        """Stop the server, then its loop; the thread is joined. Calling it again does nothing."""
        if not self._thread.is_alive():
            return
        try:
            self._call(self.server.stop())
        finally:
            self._end_loop()

    def __enter__(self) -> SyncFakeModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the script, as on the server, set from this thread -------------------

    @property
    def script(self) -> Script:
        return self.server.script

    @script.setter
    def script(self, value: ScriptLike) -> None:
        script = as_script(value)  # errors are raised here, in the caller's thread

        async def swap() -> None:
            self.server.script = script

        self._call(swap())

    def use(self, value: ScriptLike) -> None:
        """Set the script (a Script, dict, callable or path); the call count starts again."""
        self.script = value

    @property
    def requests(self) -> list[RecordedRequest]:
        async def snapshot() -> list[RecordedRequest]:
            return self.server.requests

        return self._call(snapshot())

    def clear(self) -> None:
        async def clear() -> None:
            self.server.clear()

        self._call(clear())

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def openai_base_url(self) -> str:
        return self.server.openai_base_url

    @property
    def anthropic_base_url(self) -> str:
        return self.server.anthropic_base_url

    @property
    def port(self) -> int:
        return self.server.port

    def urls(self) -> dict[str, str]:
        return self.server.urls()


@contextmanager
def running_fake_model(
    script: ScriptLike = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    record_path: str | Path | None = None,
    max_requests: int = DEFAULT_MAX_REQUESTS,
) -> Iterator[SyncFakeModel]:
    """A started fake server for the `with` block; stopped (thread joined) after it."""
    fake = SyncFakeModel(script, host=host, port=port, record_path=record_path, max_requests=max_requests)
    try:
        yield fake
    finally:
        fake.stop()

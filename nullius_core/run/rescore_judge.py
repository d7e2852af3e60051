"""A rescore's judge: the job's own (or `--judge-model`), asked on a route of each trial's own on a relay of the rescore's.

The relay forwards to the job's provider and base URL, with its key read as
for a run; each trial's judge route is recorded in its `.work/relay-judge/`
and kept in its `judge/`, as a run keeps it.
"""

from __future__ import annotations

import shutil

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs

from nullius_core.jobs.layout import TrialDir
from nullius_core.jobs.standard import JobStandard, VoiceRecord
from nullius_core.relay import upstreams
from nullius_core.relay.server import Relay, Upstream
from nullius_core.run.prepare import RunRefused
from nullius_core.run.voices import Voice, close_routes, open_routes, record_folder
from nullius_core.session import Session

@attrs.frozen
class RescoreJudge:
    """The judge a rescore asks, and where its calls go."""

    voice: Voice
    upstream: Upstream

    def record(self) -> VoiceRecord:
        return VoiceRecord(model=self.voice.model, official_model=self.voice.official, official=self.voice.model == self.voice.official)


def judge_for(session: Session, std: JobStandard, model: str | None) -> RescoreJudge | None:
    """The job's judge, or `--judge-model`'s; None for a benchmark that asked none. RunRefused: no judge to change, no key."""
    if std.judge is None:
        if model is not None:
            raise RunRefused(f"{std.benchmark_ref}'s score asked no judge in this job: --judge-model has nothing to change")
        return None
    provider = std.agent.provider if std.agent is not None else None
    base_url = std.agent.base_url if std.agent is not None else None
    try:
        upstream = upstreams.resolve(session, provider, base_url)
    except upstreams.RelayRefused as exc:
        raise RunRefused(f"the judge's calls need a provider: {exc}") from None
    voice = Voice(role="judge", model=model or std.judge.model, official=std.judge.official_model)
    return RescoreJudge(voice=voice, upstream=upstream)


@asynccontextmanager
async def judging(session: Session, judge: RescoreJudge | None, call_seconds: float | None) -> AsyncIterator[Callable[..., Any]]:
    """A way to score a trial with the judge's route open (none for a benchmark without a judge)."""
    if judge is None:
        async def plain(trial: TrialDir, score: Callable[[dict[str, str] | None], Awaitable[Any]]) -> Any:
            return await score(None)
        yield plain
        return
    relay = Relay(judge.upstream, upstreams.apis(session, judge.upstream))
    await relay.start()
    try:
        async def judged(trial: TrialDir, score: Callable[[dict[str, str] | None], Awaitable[Any]]) -> Any:
            for copied in (record_folder(trial, "judge"), trial.path / "judge"):  # the source's judge, copied: this one's replaces it
                shutil.rmtree(copied, ignore_errors=True)
            routes = open_routes(relay, trial, {"judge": judge.voice}, call_seconds)
            try:
                return await score(routes["judge"])
            finally:
                await close_routes(relay, trial, ["judge"])
        yield judged
    finally:
        await relay.stop()

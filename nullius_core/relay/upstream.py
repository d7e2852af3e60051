"""Where a relay forwards, apart from the server: what resolves it (`upstreams.py`), the run's planning and the records
name it without importing aiohttp, which a run whose units never call a model (a control's) does not load."""

from __future__ import annotations

import attrs

from nullius_core.plugins.registries import ProviderSpec


@attrs.frozen(kw_only=True)
class Upstream:
    """Where the relay forwards: a provider, its base URL, its key (held here and nowhere else)."""

    provider: ProviderSpec
    base_url: str
    key: str | None

"""A scripted fake model server: OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, streaming or not, with faults on demand.

    from nullius_core.testing.fake_model import FakeModelServer, Script, Rule, Match, Reply

    async with FakeModelServer({"rules": [{"when": {"contains": "hi"}, "reply": {"text": "hello"}}]}) as fake:
        ...  # OpenAI clients: base_url=fake.openai_base_url; Anthropic: fake.anthropic_base_url

`running_fake_model(script)` runs it in a thread for synchronous tests; the
pytest fixture `fake_model` gives one per test. See docs/fake-model.md.
"""

from nullius_core.testing.fake_model.loading import ScriptError, as_script, load_callable, load_script
from nullius_core.testing.fake_model.openrouter import Endpoint, OpenRouter
from nullius_core.testing.fake_model.request import FakeRequest, RecordedRequest
from nullius_core.testing.fake_model.script import (
    DEFAULT_TEXT,
    Fault,
    InBandError,
    Malformed,
    Match,
    Reply,
    Rule,
    Script,
    ToolCall,
    Usage,
)
from nullius_core.testing.fake_model.server import FakeModelServer
from nullius_core.testing.fake_model.sync import SyncFakeModel, running_fake_model

__all__ = [
    "DEFAULT_TEXT",
    "Endpoint",
    "FakeModelServer",
    "FakeRequest",
    "Fault",
    "InBandError",
    "Malformed",
    "Match",
    "OpenRouter",
    "RecordedRequest",
    "Reply",
    "Rule",
    "Script",
    "ScriptError",
    "SyncFakeModel",
    "ToolCall",
    "Usage",
    "as_script",
    "load_callable",
    "load_script",
    "running_fake_model",
]

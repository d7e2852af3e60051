"""The model APIs the relay passes through: OpenAI Chat Completions, Responses and Embeddings, Anthropic Messages, Gemini."""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import ModelApiRegistry, ModelApiSpec
from nullius_plugins.model_apis.chat import ChatCompletions
from nullius_plugins.model_apis.embeddings import Embeddings
from nullius_plugins.model_apis.gemini import PATHS as GEMINI_PATHS
from nullius_plugins.model_apis.gemini import Gemini
from nullius_plugins.model_apis.messages import Messages
from nullius_plugins.model_apis.responses import Responses


@hookimpl
def nullius_register_model_apis(registry: ModelApiRegistry) -> None:
    registry.add(ModelApiSpec(name="openai-chat", summary="OpenAI Chat Completions", paths=("/chat/completions",), factory=ChatCompletions))
    registry.add(ModelApiSpec(name="openai-responses", summary="OpenAI Responses", paths=("/responses",), factory=Responses))
    registry.add(ModelApiSpec(name="openai-embeddings", summary="OpenAI Embeddings (a benchmark's own relay: needs.embeddings)",
                              paths=("/embeddings",), factory=Embeddings))
    registry.add(
        ModelApiSpec(
            name="anthropic-messages",
            summary="Anthropic Messages (and count_tokens)",
            paths=("/messages", "/messages/count_tokens"),
            factory=Messages,
        )
    )
    registry.add(
        ModelApiSpec(
            name="gemini",
            summary="Gemini API (generateContent, streamGenerateContent, countTokens; the model in the path)",
            paths=GEMINI_PATHS,
            factory=Gemini,
        )
    )

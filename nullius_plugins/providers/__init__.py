"""The model providers the relay may forward to. Keys come from the environment, then the user settings."""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import ProviderRegistry, ProviderSpec

PROVIDERS = (
    ProviderSpec(
        name="openai",
        summary="OpenAI: Chat Completions and Responses.",
        apis=("openai",),
        key_env="OPENAI_API_KEY",
        base_url="https://api.openai.com/v1",
        base_url_env="OPENAI_BASE_URL",
    ),
    ProviderSpec(
        name="anthropic",
        summary="Anthropic: Messages, the key sent as x-api-key.",
        apis=("anthropic",),
        key_env="ANTHROPIC_API_KEY",
        base_url="https://api.anthropic.com/v1",
        base_url_env="ANTHROPIC_BASE_URL",
        key_header="x-api-key",
    ),
    ProviderSpec(
        name="openrouter",
        summary="OpenRouter: one model served by several providers; --served-by pins which may answer.",
        apis=("openai", "anthropic"),
        key_env="OPENROUTER_API_KEY",
        base_url="https://openrouter.ai/api/v1",
        base_url_env="OPENROUTER_BASE_URL",
        routes_to_several=True,
        # router metadata (openrouter.ai/docs/guides/features/router-metadata): the header as documented now, and under
        # the name it had while experimental; the reply's `openrouter_metadata` marks the endpoint that served it
        routing_facts=(("X-OpenRouter-Metadata", "enabled"), ("X-OpenRouter-Experimental-Metadata", "enabled")),
    ),
    ProviderSpec(
        name="gemini",
        summary="Google's Gemini API: the key sent as x-goog-api-key.",
        apis=("gemini",),
        key_env="GEMINI_API_KEY",
        base_url="https://generativelanguage.googleapis.com",  # the callers' paths start at the version: /v1beta/models/...
        base_url_env="GEMINI_BASE_URL",
        key_header="x-goog-api-key",
    ),
    ProviderSpec(
        name="openai-compatible",
        summary="Any OpenAI-compatible server (a local llama.cpp or vLLM, a company gateway): give --base-url.",
        apis=("openai", "anthropic"),
        key_env="OPENAI_COMPATIBLE_API_KEY",
        base_url=None,
        key_optional=True,
    ),
)


@hookimpl
def nullius_register_providers(registry: ProviderRegistry) -> None:
    for spec in PROVIDERS:
        registry.add(spec)

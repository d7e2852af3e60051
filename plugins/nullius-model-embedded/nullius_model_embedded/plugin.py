"""Registers the provider `embedded`; nothing is imported or checked until a run asks for it."""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import ProviderRegistry, ProviderSpec, ServeContext

MODEL = "smollm2-135m-instruct"  # the name runs, records and the price catalogue know it by


def serve(context: ServeContext):  # type: ignore[no-untyped-def]
    from nullius_model_embedded.served import EmbeddedServer  # imported only when a run uses it

    return EmbeddedServer(context)


@hookimpl
def nullius_register_providers(registry: ProviderRegistry) -> None:
    registry.add(
        ProviderSpec(
            name="embedded",
            summary=f"{MODEL} (SmolLM2-135M-Instruct, Q4_1 GGUF) served on the loopback by node-llama-cpp for the run; no key.",
            apis=("openai",),
            key_env=None,
            base_url=None,
            key_optional=True,
            default_model=MODEL,
            serve=serve,
        )
    )

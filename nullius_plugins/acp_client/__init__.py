"""The ACP client: Nullius speaking the Agent Client Protocol (JSON-RPC 2.0 over stdio) to an agent.

A thin adapter of Nullius's own: framing, request correlation and the raw
transcript are here, so an update of a kind Nullius does not know is
recorded, never dropped.
"""

from __future__ import annotations

from typing import Any

from nullius_core import hookimpl
from nullius_core.plugins import AgentProtocolRegistry, AgentProtocolSpec


def _acp_protocol() -> Any:
    # The adapter brings in asyncio and the job records: only a run talks to an
    # agent, and every other command loads this plugin too.
    from nullius_plugins.acp_client.adapter import AcpProtocol

    return AcpProtocol()


@hookimpl
def nullius_register_agent_protocols(registry: AgentProtocolRegistry) -> None:
    registry.add(
        AgentProtocolSpec(
            name="acp",
            summary="The Agent Client Protocol, version 1: JSON-RPC 2.0 over the agent's stdio.",
            factory=_acp_protocol,
        )
    )

"""The ACP client: Nullius speaking the Agent Client Protocol (JSON-RPC 2.0 over stdio) to an agent.

A thin adapter of Nullius's own: framing, request correlation and the raw
transcript are here, so an update of a kind Nullius does not know is
recorded, never dropped.
"""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import AgentProtocolRegistry, AgentProtocolSpec
from nullius_plugins.acp_client.adapter import AcpProtocol


@hookimpl
def nullius_register_agent_protocols(registry: AgentProtocolRegistry) -> None:
    registry.add(
        AgentProtocolSpec(
            name="acp",
            summary="The Agent Client Protocol, version 1: JSON-RPC 2.0 over the agent's stdio.",
            factory=AcpProtocol,
        )
    )

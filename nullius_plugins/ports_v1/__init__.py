"""The six ports of version 1 and their kits, registered as data.

A kit is a folder under `kits/` whose standard.json carries a `kit` block: the
port, `kit_version`, the `basic` checks and the `skills`. `agent.browser/v1`
is defined with no kit: its kit comes with the first browser benchmark.
"""

from pathlib import Path

from nullius_core import hookimpl
from nullius_core.plugins import PortRegistry
from nullius_core.ports import Port

KITS = Path(__file__).parent / "kits"

# port -> (contract, kit folder or None)
PORTS = {
    "agent.task/v1": ("One prompt in, one turn; the answer is the agent's last message.", "agent-task-v1"),
    "agent.workspace/v1": ("The session's cwd is the unit's workspace; the agent reads and writes there.", "agent-workspace-v1"),
    "agent.tools/v1": ("The agent calls the tools of the MCP servers given to its session.", "agent-tools-v1"),
    "agent.conversation/v1": ("Several prompts in one session, the earlier turns remembered.", "agent-conversation-v1"),
    "agent.browser/v1": ("A browser, through an MCP server Nullius starts.", None),
    "cap.memory/v1": (
        "add {session} then recall {question} -> {memory}; a session is {id, date, turns: [{role, text}], text}.",
        "cap-memory-v1",
    ),
}


@hookimpl
def nullius_register_ports(registry: PortRegistry) -> None:
    for name, (contract, kit) in PORTS.items():
        if kit is None:
            registry.add(Port(name=name, contract=contract))
        else:
            registry.add_kit(KITS / kit, contract=contract)

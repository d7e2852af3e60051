"""A tiny stdio MCP server for the tests: `echo` (prefixed by ECHO_PREFIX from its env) and `fail`."""

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("echo")


@server.tool(description="Echo a text back, with the server's prefix.")
def echo(text: str) -> str:
    return f"{os.environ.get('ECHO_PREFIX', 'no-prefix')}: {text}"


@server.tool(description="Always fails.")
def fail(reason: str) -> str:
    raise ToolError(f"failed on purpose: {reason}")


if __name__ == "__main__":
    if os.environ.get("ECHO_PIDFILE"):
        with open(os.environ["ECHO_PIDFILE"], "w") as f:
            f.write(str(os.getpid()))
    server.run()

"""What a backend that isolates an agent shares: the folders it shows, the door's machine side, the MCP bridge inside.

`mounts` picks the folders of this machine a sandbox sees read-only;
`door` keeps a unit's services on this machine behind Unix sockets (the
run's relay, a benchmark's MCP servers); `inside/mcp_bridge.py` is the
agent's stdio entry for such an MCP server, run inside the sandbox. The
docker backend and the bubblewrap backend both use them.
"""

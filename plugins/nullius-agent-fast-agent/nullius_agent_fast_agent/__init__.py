"""fast-agent (fast-agent-mcp) as a Nullius agent."""

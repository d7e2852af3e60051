"""OpenCode as a Nullius agent."""

"""GitHub Copilot CLI as a Nullius agent."""

"""Kimi CLI (kimi-cli) as a Nullius agent."""

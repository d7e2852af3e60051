"""Kilo Code CLI as a Nullius agent."""

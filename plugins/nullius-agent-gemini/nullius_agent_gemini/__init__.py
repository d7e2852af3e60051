"""Gemini CLI as a Nullius agent."""

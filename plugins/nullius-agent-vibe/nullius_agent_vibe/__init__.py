"""Mistral Vibe as a Nullius agent."""

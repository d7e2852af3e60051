"""Codex ACP as a Nullius plugin: it ships the catalogue entry `agents/codex`."""

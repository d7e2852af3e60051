"""Claude Agent ACP as a Nullius plugin: it ships the catalogue entry `agents/claude`."""

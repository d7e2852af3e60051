"""The Nullius reference agent as a plugin: it ships the catalogue entry `agents/reference`."""

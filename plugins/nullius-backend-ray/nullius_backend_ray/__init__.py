"""The Nullius ray backend."""

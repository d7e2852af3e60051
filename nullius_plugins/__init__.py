"""Plugins bundled with the `nullius` distribution.

Each is registered through the `nullius` entry-point group in the root
pyproject.toml, exactly as a third party's plugin is; none is imported by the
core.
"""

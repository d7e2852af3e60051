"""A run refused before its first unit: what a backend's `start` or factory raises, and the engine's own refusals."""


class RunRefused(Exception):
    """The run cannot start; the message says why and, where it can, what to do."""

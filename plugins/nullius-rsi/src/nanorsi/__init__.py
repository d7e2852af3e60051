"""nanoRSI: recursive harness improvement around a frozen model, auditable from its ledger."""

__version__ = "0.5.0"


class NanoError(Exception):
    """A user-facing error: the CLI prints it in one line, without a traceback."""

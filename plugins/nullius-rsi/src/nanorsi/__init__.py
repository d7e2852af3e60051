"""nanoRSI: recursive harness improvement around a frozen model, auditable from its ledger."""

__version__ = "0.1.0"
SPEC = "0.5"  # the nanoRSI kernel specification this implements


class NanoError(Exception):
    """A user-facing error: the CLI prints it in one line, without a traceback."""

"""Where the peers a benchmark measures against live: the folder NULLIUS_PEERS names.

The peers (a minimal proxy, Harbor's task maker, Inspect AI's GSM8K task, ...)
are set up outside the repository, for side-by-side measurement only; nothing
in the project's run or tests reads them, so no path to them is written here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def peers(*parts: str) -> Path:
    """NULLIUS_PEERS/parts..., or an exit naming the variable when it is not set or the folder is not there."""
    root = os.environ.get("NULLIUS_PEERS", "")
    if not root:
        sys.exit("this benchmark measures against a peer: set NULLIUS_PEERS to the folder of the peers (harbor/, relay/, inspect_gsm8k.py)")
    found = Path(root).expanduser().joinpath(*parts)
    if not found.exists():
        sys.exit(f"NULLIUS_PEERS: {found} is not there")
    return found

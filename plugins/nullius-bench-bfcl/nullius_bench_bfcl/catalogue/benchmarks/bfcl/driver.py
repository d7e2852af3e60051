"""BFCL v4's driver: JSON lines on stdin and stdout; bfcl-eval's own data, tools and checkers behind each op.

stdout carries the replies alone: the upstream prints (its loaders and
checkers, and the SDKs its model registry imports), so the driver keeps the
real stdout for itself and points file descriptor 1 at stderr before
importing it. See nullius_bfcl/ for the pieces and README.md for the protocol.
"""

from __future__ import annotations

import json
import os
import sys


def _private_stdout():
    """The replies' own stream; whatever else writes to fd 1 lands on stderr."""
    replies = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return replies


OPS = {"units", "setup", "turn", "oracle", "score"}


def main() -> int:
    replies = _private_stdout()
    from nullius_bfcl.ops import DataError, Driver, OpError

    driver = Driver()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise OpError("a request is a JSON object")
            op = request.get("op")
            if op not in OPS:
                raise OpError(f"op: unknown op {op!r}: expected one of {', '.join(sorted(OPS))}")
            reply = getattr(driver, op)(request)
        except (OpError, DataError) as exc:
            reply = {"error": str(exc)}
        except json.JSONDecodeError as exc:
            reply = {"error": f"the request is not JSON: {exc}"}
        except Exception as exc:  # a bug here is the unit's error, said, and the driver goes on
            import traceback

            traceback.print_exc()
            reply = {"error": f"the driver failed: {type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    replies.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""τ²-bench's driver: JSON lines on stdin and stdout, tau2's own loop and evaluation behind each op.

stdout carries the replies alone: tau2 and litellm print (tau2's runner
logs with print, litellm warns on stdout), so the driver keeps the real
stdout for itself and points file descriptor 1 at stderr before importing
them. See nullius_tau2/ for the pieces and README.md for the protocol.
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


def main() -> int:
    replies = _private_stdout()
    # litellm fetches its price list from the internet at import unless told to use its own copy
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")  # tau2 run's default log level (config.DEFAULT_LOG_LEVEL)

    from nullius_tau2.agents import register
    from nullius_tau2.data import DataError
    from nullius_tau2.fields import OpError
    from nullius_tau2.ops import Driver

    register()
    try:
        driver = Driver()
        broken = ""
    except OpError as exc:  # a bad option: every op says so
        driver, broken = None, str(exc)
    ops = {"units", "setup", "turn", "answer", "oracle", "score"}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise OpError("a request is a JSON object")
            op = request.get("op")
            if op not in ops:
                raise OpError(f"op: unknown op {op!r}: expected one of {', '.join(sorted(ops))}")
            if broken:
                raise OpError(broken)
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
    if driver is not None:
        driver.close()
    replies.close()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # stdin closed, nothing left to keep: no thread (a simulator or judge call still waiting) holds the exit
    os._exit(code)

"""The provider's key kept out of the kernel: `nullius improve` holds the variables named like secrets in memory and
hands them, over a Unix socket, to each rollout's `nullius run` alone.

The kernel runs with an environment without them (`without_secrets`): what it
gets instead is where the desk listens and a one-time-per-experiment token,
neither of which is a key. `nullius improve rollout` (a child of the kernel)
asks the desk with that token and puts the answer into its own `nullius run`'s
environment, where the run's relay reads the key as it always does. The socket
is a 0600 file in a 0700 folder of the user's; a wrong token gets nothing.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import threading
from collections.abc import Mapping
from pathlib import Path

from nullius_core.secret_names import looks_secret, without_secrets

SOCKET_VAR = "NULLIUS_IMPROVE_KEYS"  # where the desk listens
TOKEN_VAR = "NULLIUS_IMPROVE_KEYS_TICKET"  # what it asks of a caller (named so that it is not taken for a secret itself)
ASK_SECONDS = 30


class KeyDesk:
    """The secrets of `env`, served to a caller that shows the ticket; none of them is in `kernel_env()`."""

    def __init__(self, env: Mapping[str, str], folder: Path):
        self._values = {k: v for k, v in env.items() if looks_secret(k)}
        self._ticket = secrets.token_urlsafe(32)
        self.path = folder / "keys.sock"
        self.path.unlink(missing_ok=True)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self._server.listen(8)
        self._env = dict(env)
        threading.Thread(target=self._serve, name="key-desk", daemon=True).start()

    def kernel_env(self) -> dict[str, str]:
        """The environment the kernel runs in: this one without its secrets, and where to ask for them."""
        return {**without_secrets(self._env), SOCKET_VAR: str(self.path), TOKEN_VAR: self._ticket}

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            with conn:
                conn.settimeout(ASK_SECONDS)
                try:
                    shown = conn.makefile("r", encoding="utf-8").readline().strip()
                    answer = self._values if hmac.compare_digest(shown, self._ticket) else {}
                    conn.sendall(json.dumps(answer).encode() + b"\n")
                except OSError:
                    continue

    def close(self) -> None:
        self._server.close()
        self.path.unlink(missing_ok=True)


def asked(env: Mapping[str, str]) -> dict[str, str]:
    """The secrets from the desk `env` names (none when it names none); an environment for `nullius run` holds them."""
    where, ticket = env.get(SOCKET_VAR), env.get(TOKEN_VAR)
    if not where or not ticket:
        return {}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(ASK_SECONDS)
        conn.connect(where)
        conn.sendall(ticket.encode() + b"\n")
        answer = json.loads(conn.makefile("r", encoding="utf-8").readline() or "{}")
    return {str(k): str(v) for k, v in answer.items()} if isinstance(answer, dict) else {}


def run_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment a rollout's `nullius run` gets: this one, the desk's secrets added, the desk's address left out."""
    out = {k: v for k, v in env.items() if k not in (SOCKET_VAR, TOKEN_VAR)}
    out.update(asked(env))
    return out

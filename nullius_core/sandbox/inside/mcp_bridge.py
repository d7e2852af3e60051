"""The agent's stdio entry for a benchmark's MCP server, inside the agent's container or sandbox; standard library only.

Joins this process's stdin and stdout to the unit's door (NULLIUS_MCP_AT,
host:port), asking for the server NULLIUS_MCP_SERVER. The server itself runs on
the machine, outside every container of the agent.
"""

import os
import socket
import sys
import threading
import time


def main():
    host, _, port = os.environ["NULLIUS_MCP_AT"].rpartition(":")
    deadline = time.monotonic() + 30
    while True:  # the door may still be starting when the agent starts its servers
        try:
            conn = socket.create_connection((host, int(port)), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    conn.settimeout(None)
    conn.sendall(os.environ["NULLIUS_MCP_SERVER"].encode() + b"\n")

    def upward():
        try:
            while True:
                data = os.read(0, 65536)
                if not data:
                    break
                conn.sendall(data)
        except OSError:
            pass
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=upward, daemon=True).start()
    while True:
        data = conn.recv(65536)
        if not data:
            break
        os.write(1, data)
    sys.exit(0)


if __name__ == "__main__":
    main()

"""A port scan an agent runs inside its container: every TCP port of each address given, and what answered.

    python3 portscan.py ADDRESS...

prints one line, `SCAN {"<address>": {"open": [ports], "not": {"<why>": count}}, ...}`.
A port is open when a connection to it is made; refused, unreachable and
silent (past 0.5 s) ports are not, and `not` counts each reason. A socket that
met itself (on a loopback, a port of the ephemeral range can be the
connection's own) is not a listener. Standard
library only: it runs on whatever python3 the container has.
"""

import errno
import json
import select
import socket
import sys
import time

BATCH = 4096  # sockets at once: a silent address costs SECONDS per batch
SECONDS = 0.5


def scan(address, ports=range(1, 65536)):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    found, why = [], {}

    def no(reason):
        why[reason] = why.get(reason, 0) + 1

    def made(sock, port):
        try:
            itself = sock.getsockname() == sock.getpeername()
        except OSError:
            itself = False
        if itself:
            no("itself")
        else:
            found.append(port)

    ports = list(ports)
    for start in range(0, len(ports), BATCH):
        pending = {}
        for port in ports[start:start + BATCH]:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
            code = sock.connect_ex((address, port))
            if code == 0:
                made(sock, port)
                sock.close()
            elif code == errno.EINPROGRESS:
                pending[sock.fileno()] = (sock, port)
            else:
                no(errno.errorcode.get(code, str(code)))
                sock.close()
        poller = select.poll()
        for fd in pending:
            poller.register(fd, select.POLLOUT)
        deadline = time.monotonic() + SECONDS
        while pending and time.monotonic() < deadline:
            for fd, _ in poller.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                sock, port = pending.pop(fd)
                poller.unregister(fd)
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code == 0:
                    made(sock, port)
                else:
                    no(errno.errorcode.get(code, str(code)))
                sock.close()
        for sock, _ in pending.values():
            no("silent")
            sock.close()
    return {"open": sorted(found), "not": why}


if __name__ == "__main__":
    print("SCAN " + json.dumps({address: scan(address) for address in sys.argv[1:]}), flush=True)

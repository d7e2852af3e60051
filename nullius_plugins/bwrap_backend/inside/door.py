"""A unit's door inside its bubblewrap sandbox, then its agent; the interpreter's C modules only.

It starts before the agent, on every unit: it imports `_socket`, `_thread`
and `_signal`, not `socket`, `threading`, `signal`, `re` or `asyncio`, whose
imports (enum among them) cost more than the rest of its start.

    python3 -I -S door.py SOCKET_DIR ADDRESS:PORT=NAME ... -- COMMAND ARG...

The sandbox has a network namespace of its own: a loopback and nothing else.
The door listens on it at each ADDRESS:PORT and joins every connection to
the Unix socket SOCKET_DIR/NAME.sock, whose other end is on this machine
(the run's relay, a benchmark's MCP server); a `NAME` ending in `*` is
completed by the connection's first line (the MCP door: the line names the
server). Once it listens, it starts COMMAND (the agent) with the sandbox's
stdio and its environment, forwards SIGTERM and SIGINT to it, and exits
with its status: the agent's end is the sandbox's end.
"""

import _signal
import _socket
import _thread
import os
import sys

FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
REST = FIRST + "_.-"


def is_name(text):
    """An MCP server's name, as forward.py's NAME pattern has it: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}."""
    return 0 < len(text) <= 64 and text[0] in FIRST and all(c in REST for c in text)


def pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(_socket.SHUT_WR)
    except OSError:
        pass


def first_line(conn):
    line = b""
    while not line.endswith(b"\n") and len(line) < 1024:
        piece = conn.recv(1)
        if not piece:
            break
        line += piece
    return line.decode("utf-8", "replace").strip()


def serve(sockets, name, conn):
    try:
        if name.endswith("*"):
            first = first_line(conn)
            if not is_name(first):
                conn.sendall(f"no such server: {first!r}\n".encode())
                conn.close()
                return
            name = name[:-1] + first
        up = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        up.connect(os.path.join(sockets, name + ".sock"))
    except OSError as exc:
        try:
            conn.sendall(f"the door cannot reach {name}: {type(exc).__name__}\n".encode())
        except OSError:
            pass
        conn.close()
        return
    done = _thread.allocate_lock()
    done.acquire()

    def back():
        pipe(up, conn)
        done.release()

    _thread.start_new_thread(back, ())
    pipe(conn, up)
    done.acquire()
    conn.close()
    up.close()


def accept(listener, sockets, name):
    while True:
        fd, _ = listener._accept()
        conn = _socket.socket(fileno=fd)
        conn.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)  # a reply's pieces go as they come: no 40 ms delayed-ACK stall
        _thread.start_new_thread(serve, (sockets, name, conn))


def main():
    args = sys.argv[1:]
    cut = args.index("--")
    sockets, mappings, command = args[0], args[1:cut], args[cut + 1:]
    listeners = []
    for mapping in mappings:
        address, _, name = mapping.partition("=")
        host, _, port = address.rpartition(":")
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        listener.bind((host, int(port)))
        listener.listen(128)
        listeners.append((listener, name))
    agent = os.fork()
    if agent == 0:  # the listeners are not inherited across exec (Python makes its sockets close-on-exec)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"[nullius] the agent's command {command[0]!r} cannot start: {exc}\n".encode())
            os._exit(127)
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, lambda number, frame: os.kill(agent, number))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the agent's stdio is its own: the door holds no end of it
        os.dup2(devnull, fd)
    for listener, name in listeners:
        _thread.start_new_thread(accept, (listener, sockets, name))
    while True:
        try:
            _, status = os.waitpid(agent, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()

"""The run's maker of sandboxes' door listeners, each made in its sandbox's own network namespace; standard library only.

    python3 -I -S listeners.py [LABEL]

The bwrap backend starts it once a run (maker.py), outside every sandbox,
its stdin a Unix socket (SOCK_SEQPACKET) to the run's process; LABEL (the
job's folder) only names it in `ps`. Each message asks for one sandbox's
listeners: its text the ports, its two descriptors the sandbox's network
namespace and a socket for the answer. A child of this process answers it:
it enters the user namespace that owns the sandbox's network namespace
(where it has every capability, being the user who made it), then the
network namespace, makes a listening socket on 127.0.0.1 at each port,
sends them back and exits. A socket stays in the namespace it was made in,
so the run's process serves them from outside.

A child, not a thread of the run's process: a thread may enter a network
namespace only with CAP_SYS_ADMIN where it is (root), and no thread of a
process of several threads may enter a user namespace. This process is of
one thread, so its children may; it never leaves its own namespaces. The
sandbox is held by bwrap's --block-fd meanwhile: nothing of the agent runs.

It exits when the run's process closes its end (or, killed with the run, by
the run's watcher: it carries the run's marker).
"""

import fcntl
import os
import signal
import socket

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace
IP_FREEBIND = 15  # Linux's; socket.IP_FREEBIND is not in Python 3.11

if not hasattr(os, "setns"):  # before Python 3.12: libc's, loaded once here rather than in every child
    import ctypes

    LIBC = ctypes.CDLL(None, use_errno=True)


def enter(fd, kind):
    if hasattr(os, "setns"):
        os.setns(fd, kind)
        return
    if LIBC.setns(fd, kind) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"setns: {os.strerror(number)}")


def made(netns, ports):
    """Listening sockets at 127.0.0.1:PORT in the namespace `netns`; this process's namespaces are changed for good."""
    enter(fcntl.ioctl(netns, NS_GET_USERNS), CLONE_NEWUSER)
    enter(netns, CLONE_NEWNET)
    out = []
    for port in ports:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_IP, IP_FREEBIND, 1)  # bwrap may not have brought the sandbox's loopback up yet
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
        out.append(sock)
    return out


def answer(netns, reply, text):
    """In a child: the listeners, or why not, sent back on `reply`; then the child ends."""
    back = socket.socket(fileno=reply)
    try:
        socks = made(netns, [int(port) for port in text.split()])
        socket.send_fds(back, [b"ok"], [sock.fileno() for sock in socks])
    except BaseException as exc:  # noqa: BLE001 - said to the run's process, which raises it there
        try:
            back.send(f"{type(exc).__name__}: {exc}".encode()[:1000])
        except OSError:
            pass
    os._exit(0)


def main():
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # its children are reaped by the kernel
    channel = socket.socket(fileno=0)
    while True:
        text, fds, _, _ = socket.recv_fds(channel, 1024, 2)
        if not text:
            return  # the run's process closed its end
        try:
            if len(fds) == 2 and os.fork() == 0:
                answer(fds[0], fds[1], text.decode())
        except OSError as exc:  # no child to be had: the run's process hears why
            socket.socket(fileno=os.dup(fds[1])).send(f"fork: {exc}".encode())
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main()

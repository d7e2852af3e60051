"""A unit's door: the one container of a unit with a network namespace of its own; standard library only.

The door runs with `--network none`: its namespace has a loopback and
nothing else, no route to this machine or anywhere. The unit's agent
container (or its task's box) joins that namespace (`--network
container:<door>`), so the loopback is all the agent has too. On it the door
listens at fixed addresses, and joins each connection to a Unix socket in
the mounted folder, whose other end is on the machine (the run's relay, a
benchmark's MCP server, a licence server's forwarder, the check's egress
proxy). A socket that is not there refuses the connection.

    python3 forward.py SOCKET_DIR ADDRESS:PORT=NAME ...

`NAME` is the socket `SOCKET_DIR/NAME.sock`; a `NAME` ending in `*` is a
prefix, completed by the connection's first line (the MCP door: the line
names the server). The first line on stdout is `ready`. The door ends when
its stdin closes: it lives as long as the run that attached it.
"""

import asyncio
import os
import re
import sys

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            writer.close()


async def serve(sockets, name, reader, writer):
    try:
        if name.endswith("*"):
            first = (await reader.readline()).decode("utf-8", "replace").strip()
            if not NAME.match(first):
                writer.write(f"no such server: {first!r}\n".encode())
                writer.close()
                return
            name = name[:-1] + first
        path = os.path.join(sockets, name + ".sock")
        up_reader, up_writer = await asyncio.open_unix_connection(path)
    except (ConnectionError, OSError) as exc:
        writer.write(f"the door cannot reach {name}: {type(exc).__name__}\n".encode())
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    writer.close()
    up_writer.close()


async def until_stdin_closes():
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.buffer.read)


async def main():
    sockets, mappings = sys.argv[1], sys.argv[2:]
    servers = []
    for mapping in mappings:
        address, _, name = mapping.partition("=")
        host, _, port = address.rpartition(":")
        servers.append(await asyncio.start_server(lambda r, w, n=name: serve(sockets, n, r, w), host, int(port)))
    print("ready", flush=True)
    await until_stdin_closes()
    for server in servers:
        server.close()


if __name__ == "__main__":
    asyncio.run(main())

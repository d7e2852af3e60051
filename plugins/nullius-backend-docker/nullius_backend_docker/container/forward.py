"""A unit's door: runs in a container on the unit's internal network, standard library only.

The MCP door: each connection names the server it wants on its first line;
the door joins it to that server's Unix socket in the mounted folder (one
socket per server per unit, each connection one start of the server, on the
machine). The agent's container holds nothing of the server.

A licence server's forwarder: each connection is joined to HOST:PORT, the
one address beyond the unit's network the agent may reach.

    python3 forward.py PORT SOCKET_DIR
    python3 forward.py tcp PORT HOST PORT
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


async def serve(sockets, reader, writer):
    try:
        first = (await reader.readline()).decode("utf-8", "replace").strip()
        path = os.path.join(sockets, first + ".sock")
        if not NAME.match(first) or not os.path.exists(path):
            writer.write(f"no MCP server {first!r} for this unit\n".encode())
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_unix_connection(path)
    except (ConnectionError, OSError) as exc:
        writer.write(f"the door cannot reach the server: {exc}\n".encode())
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    writer.close()
    up_writer.close()


async def forward(target, reader, writer):
    try:
        up_reader, up_writer = await asyncio.open_connection(*target)
    except (ConnectionError, OSError):
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    writer.close()
    up_writer.close()


async def main():
    if sys.argv[1] == "tcp":
        port, target = int(sys.argv[2]), (sys.argv[3], int(sys.argv[4]))
        server = await asyncio.start_server(lambda r, w: forward(target, r, w), "0.0.0.0", port)
    else:
        port, sockets = int(sys.argv[1]), sys.argv[2]
        server = await asyncio.start_server(lambda r, w: serve(sockets, r, w), "0.0.0.0", port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())

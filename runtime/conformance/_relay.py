"""The agent command the kit gives a client in client mode: relays its stdio to the kit's Unix socket.

    python .../acp_types/conformance/_relay.py SOCKET

A client under test spawns this as its agent (the kit puts it where the
client's command says ``{agent}``); every byte goes to the kit unchanged, in
both directions. It exits when either side closes.

Hand-written: the source is runtime/conformance/_relay.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def _pump(read: int, write: socket.socket) -> None:
    while chunk := os.read(read, 1 << 16):
        write.sendall(chunk)
    write.shutdown(socket.SHUT_WR)


def main(path: str) -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError as exc:
        print(f"conformance relay: cannot reach the kit at {path}: {exc}", file=sys.stderr)
        return 2
    threading.Thread(target=_pump, args=(sys.stdin.fileno(), conn), daemon=True).start()
    out = sys.stdout.fileno()
    while chunk := conn.recv(1 << 16):
        os.write(out, chunk)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else "usage: _relay.py SOCKET")

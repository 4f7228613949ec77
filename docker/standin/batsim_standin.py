"""Entrypoint of the Batsim stand-in image: ``mrsched simulate`` with Batsim's command line.

``mrsched simulate`` connects to loopback endpoints only (simulator/connection.py), whereas
the compose file gives Batsim ``-s tcp://scheduler:28000``, another container. So that the
compose file stays exactly the one the official image runs, this entrypoint relays a loopback
port of its own container to that endpoint (bytes both ways: ZeroMQ never knows) and hands
the loopback endpoint to the simulator. Every other argument goes through unchanged.
"""

from __future__ import annotations

import re
import socket
import sys
import threading

_REMOTE = re.compile(r"^tcp://(?P<host>[^:/\[\]]+):(?P<port>\d{1,5})$")
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1"}
CHUNK = 1 << 16


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy until ``src`` closes, then close ``dst``'s writing half (TCP half-close)."""
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(listener: socket.socket, host: str, port: int) -> None:
    """Each connection of the simulator gets its own connection to the scheduler."""
    while True:
        local, _ = listener.accept()
        try:
            remote = socket.create_connection((host, port), timeout=10)
            remote.settimeout(None)
        except OSError:
            local.close()  # ZeroMQ reconnects: the scheduler may not be listening yet
            continue
        for src, dst in ((local, remote), (remote, local)):
            threading.Thread(target=_pump, args=(src, dst), daemon=True).start()


def relay(host: str, port: int) -> str:
    """Listen on a free loopback port forwarding to ``host:port``; the loopback endpoint."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    threading.Thread(target=_serve, args=(listener, host, port), daemon=True).start()
    return f"tcp://127.0.0.1:{listener.getsockname()[1]}"


def localize(argv: list[str]) -> list[str]:
    """``argv`` with a non-loopback ``-s``/``--socket-endpoint`` replaced by a relay's."""
    out = list(argv)
    for i, arg in enumerate(out):
        value_at, value = None, None
        if arg in ("-s", "--socket-endpoint") and i + 1 < len(out):
            value_at, value = i + 1, out[i + 1]
        elif arg.startswith("--socket-endpoint="):
            value_at, value = i, arg.split("=", 1)[1]
        if value is None:
            continue
        match = _REMOTE.match(value)
        if match and match["host"] not in _LOOPBACK_HOSTS:
            local = relay(match["host"], int(match["port"]))
            out[value_at] = local if value_at != i else f"--socket-endpoint={local}"
    return out


def main(argv: list[str] | None = None) -> int:
    from mrsched.cli import main as mrsched_main

    return mrsched_main(["simulate", *localize(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

"""The ZeroMQ REP loop that serves a scheduler to Batsim (or to the embedded engine).

Batsim connects a REQ socket and waits, without timeout, for one reply per message; the
scheduler binds. ``serve`` binds loopback only unless told otherwise, answers until
``SIMULATION_ENDS`` and always leaves with the socket closed (linger 0).

Exit codes returned by ``serve``:
  * 0   — replied to SIMULATION_ENDS;
  * 2   — malformed message (bad JSON, NaN, several parts, nesting too deep, missing key, bad
          event), a message real Batsim never sends (a job submitted twice, a completion of a
          job never started, ...) or a scheduler decision Batsim would refuse: one line naming the event goes to stderr and the socket is closed
          *without replying* — an empty reply would only let Batsim run on a broken
          scheduler, and Batsim blocks either way, so the caller must stop it;
  * 130 — SIGINT (Ctrl-C), 143 — SIGTERM (128 + signal number, as a shell reports them).
A receive timeout raises ``SchedulerTimeout`` (after closing the socket). Any other exception
raised by the scheduler's own code (a bug, not a bad message) propagates with its traceback,
the socket closed.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any, TextIO

from mrsched.errors import ConfigError, MrschedError, ProtocolError, SchedulerTimeout

__all__ = ["serve", "check_endpoint", "DEFAULT_SOCKET", "EXIT_OK", "EXIT_MALFORMED",
           "EXIT_SIGINT", "EXIT_SIGTERM"]

DEFAULT_SOCKET = "tcp://127.0.0.1:28000"
EXIT_OK = 0
EXIT_MALFORMED = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

# How often a blocked receive wakes up to look at signal flags: a bound on shutdown latency,
# not a timeout (a message that arrives wakes the poll at once).
_POLL_MS = 100
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def _refuse_constant(name: str):
    """NaN and Infinity are not JSON (Python accepts them, Batsim's parser does not)."""
    raise ValueError(f"{name} is not a JSON number")


def check_endpoint(socket: str, *, allow_remote: bool = False) -> str:
    """Validate a ZeroMQ endpoint for binding; returns the address to bind.

    ``tcp://`` must name a loopback address (``127.0.0.1``, ``localhost``, ``::1``) and a port,
    unless ``allow_remote`` is true; ``ipc://`` and ``inproc://`` are local by nature.
    """
    if not isinstance(socket, str) or "://" not in socket:
        raise ConfigError(f"bad socket {socket!r}", field="socket",
                          hint="expected tcp://127.0.0.1:PORT")
    scheme = socket.split("://", 1)[0]
    if scheme in ("ipc", "inproc"):
        return socket
    if scheme != "tcp":
        raise ConfigError(f"unsupported socket transport {scheme!r}", field="socket",
                          hint="use tcp://127.0.0.1:PORT or ipc://PATH")
    rest = socket[len("tcp://"):]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"bad socket {socket!r}: needs a port", field="socket",
                          hint="expected tcp://127.0.0.1:PORT")
    if host not in _LOOPBACK and not allow_remote:
        raise ConfigError(f"refusing to bind {socket!r}: not a loopback address",
                          field="socket",
                          hint="bind tcp://127.0.0.1:PORT, or pass allow_remote=True "
                               "(--allow-remote) to expose the scheduler on the network")
    if host == "localhost":
        host = "127.0.0.1"  # libzmq binds interfaces, not host names
    elif host in ("::1", "[::1]"):
        host = "[::1]"
    return f"tcp://{host}:{port}"


def serve(scheduler: Any, socket: str = DEFAULT_SOCKET, timeout: float | None = None, *,
          allow_remote: bool = False, stderr: TextIO | None = None,
          ready: TextIO | None = None) -> int:
    """Answer Batsim's messages with ``scheduler.handle_message`` until SIMULATION_ENDS.

    Parameters
    ----------
    scheduler : object with ``handle_message(dict) -> dict`` (a ``BatsimScheduler``).
    socket : endpoint to bind, loopback only unless ``allow_remote``.
    timeout : seconds to wait for each message; ``None`` waits forever (as Batsim does).
    stderr : where the one-line diagnostic goes (default ``sys.stderr``).
    ready : where to print one line once the socket is bound (``mrsched serve``: stdout), so
        that a user knows when to start Batsim; None prints nothing.

    Returns the exit code (see the module docstring); raises ``SchedulerTimeout`` when no
    message arrives within ``timeout`` and ``ConfigError`` when the endpoint is refused or
    cannot be bound.
    """
    import zmq

    address = check_endpoint(socket, allow_remote=allow_remote)
    if timeout is not None and not timeout > 0:
        raise ConfigError(f"timeout must be > 0 seconds, got {timeout!r}", field="timeout")
    err = stderr if stderr is not None else sys.stderr

    stop: list[int] = []
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        def _on_signal(signum, _frame):
            stop.append(signum)
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, _on_signal)

    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    if address.startswith("tcp://["):
        sock.setsockopt(zmq.IPV6, 1)  # libzmq refuses IPv6 addresses without it
    try:
        try:
            sock.bind(address)
        except zmq.ZMQError as exc:
            import errno
            hint = {errno.EADDRINUSE: "is another scheduler using this port?",
                    errno.EADDRNOTAVAIL: "this machine has no interface with that address",
                    errno.EACCES: "ports below 1024 need privileges"}.get(exc.errno)
            raise ConfigError(f"cannot bind {address}: {exc}", field="socket", hint=hint) from None
        if ready is not None:
            print(f"mrsched serve: ready, listening on {address} (start Batsim with -s "
                  f"{address})", file=ready, flush=True)
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        count = 0
        while True:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                if stop:
                    return EXIT_SIGINT if stop[0] == signal.SIGINT else EXIT_SIGTERM
                try:
                    ready = poller.poll(_POLL_MS)
                except zmq.ZMQError as exc:
                    if exc.errno == zmq.EINTR:
                        continue
                    raise
                except KeyboardInterrupt:  # previous SIGINT handler, when not in main thread
                    return EXIT_SIGINT
                if ready:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    raise SchedulerTimeout(f"no message from Batsim within {timeout} s",
                                           hint=f"after {count} message(s) on {address}")
            frames = sock.recv_multipart()
            count += 1
            try:
                if len(frames) != 1:
                    raise ProtocolError(f"message {count} has {len(frames)} parts; Batsim sends "
                                        "one JSON message per request")
                try:
                    msg = json.loads(frames[0], parse_constant=_refuse_constant)
                except RecursionError:
                    raise ProtocolError(f"message {count} is nested too deeply to be a Batsim "
                                        "message") from None
                except ValueError as exc:
                    raise ProtocolError(f"message {count} is not JSON: {exc}") from None
                try:
                    reply = scheduler.handle_message(msg)
                except RecursionError:
                    raise ProtocolError(f"message {count} is nested too deeply to be a Batsim "
                                        "message") from None
            except MrschedError as exc:
                where = f"message {count}" if f"message {count}" not in str(exc) else ""
                print(f"mrsched serve: error: {where + ': ' if where else ''}{exc}", file=err)
                return EXIT_MALFORMED
            sock.send(json.dumps(reply).encode())
            events = msg["events"]
            if events and events[-1].get("type") == "SIMULATION_ENDS":
                return EXIT_OK
    finally:
        sock.close(linger=0)
        ctx.term()
        for sig, handler in previous.items():
            signal.signal(sig, handler)

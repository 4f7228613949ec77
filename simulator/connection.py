"""Connections from the engine to a scheduler: Batsim's ZeroMQ REQ socket, with a timeout.

Real Batsim waits forever for a dead scheduler; here a receive timeout turns that into a
``SchedulerTimeout`` naming the endpoint. Only loopback endpoints are accepted (the scheduler
binds 127.0.0.1; nothing here talks to another machine).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mrsched.errors import ConfigError, ProtocolError, SchedulerTimeout
from mrsched.simulator.jsonnum import rapidjson_float

DEFAULT_SOCKET = "tcp://localhost:28000"
_LOOPBACK = re.compile(r"^tcp://(localhost|127\.0\.0\.1|\[::1\]):(\d{1,5})$")


def check_endpoint(endpoint: str) -> str:
    """Accept ``tcp://localhost:PORT``, ``tcp://127.0.0.1:PORT``, ``ipc://``, ``inproc://``."""
    if not isinstance(endpoint, str):
        raise ConfigError(f"socket must be a string, got {endpoint!r}", field="socket")
    if endpoint.startswith(("ipc://", "inproc://")):
        return endpoint
    m = _LOOPBACK.match(endpoint)
    if not m or not 0 < int(m.group(2)) < 65536:
        raise ConfigError(f"unsupported scheduler endpoint {endpoint!r}", field="socket",
                          hint="use tcp://127.0.0.1:PORT (loopback only)")
    return endpoint


class ZmqScheduler:
    """The engine's side of Batsim's protocol over ZeroMQ: one REQ socket, lock-step."""

    #: replies decoded from the scheduler's text with rapidjson's reading of numbers (the
    #: server reads an in-process scheduler's replies so itself: ``server.read_as_batsim``)
    text_replies = True

    def __init__(self, socket: str = DEFAULT_SOCKET, timeout: float | None = 300.0):
        import zmq

        self.endpoint = check_endpoint(socket)
        self.timeout = timeout
        self._zmq = zmq
        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.REQ)
        self._sock.setsockopt(zmq.LINGER, 0)
        if timeout is not None:
            self._sock.setsockopt(zmq.RCVTIMEO, int(timeout * 1000))
            self._sock.setsockopt(zmq.SNDTIMEO, int(timeout * 1000))
        self._sock.connect(self.endpoint)
        self.closed = False

    def handle_message(self, msg: dict) -> dict:
        zmq = self._zmq
        if self.closed:
            raise ProtocolError("the connection to the scheduler is closed")
        try:
            self._sock.send_string(json.dumps(msg))
            text = self._sock.recv_string()
        except zmq.Again:
            self.close()
            raise SchedulerTimeout(f"no answer from the scheduler at {self.endpoint} within "
                                   f"{self.timeout:g} s", event=_first_type(msg),
                                   hint="is the scheduler running? --timeout S waits longer"
                                   ) from None
        except zmq.ZMQError as exc:
            self.close()
            raise ProtocolError(f"ZeroMQ error talking to {self.endpoint}: {exc}") from None
        if any(e.get("type") == "SIMULATION_ENDS" for e in msg.get("events", ())):
            self.close()
        return parse_reply(text)

    def close(self) -> None:
        if not self.closed:
            self._sock.close(linger=0)
            self.closed = True

    def __enter__(self) -> "ZmqScheduler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _not_json(token: str):
    raise ValueError(f"'{token}' is not a JSON number")


#: one decoder for every reply (``json.loads`` with hooks builds one per call)
_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=rapidjson_float)


def parse_reply(text: str) -> Any:
    """A scheduler's reply text -> its JSON value, numbers read as rapidjson reads them
    (``jsonnum``); what Batsim's parser refuses is a ProtocolError of one line: malformed JSON,
    NaN/Infinity, nesting Python cannot follow."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"the scheduler answered malformed JSON: {exc.msg}",
                            hint=repr(text[:80])) from None
    except ValueError as exc:
        raise ProtocolError(f"the scheduler answered malformed JSON: {exc}",
                            hint="Batsim's JSON parser refuses it too") from None
    except RecursionError:
        raise ProtocolError("the scheduler's reply nests arrays or objects too deeply to be read",
                            hint=f"a Batsim reply is {{\"now\": ..., \"events\": [...]}}; got "
                                 f"{text[:40]!r}...") from None


def _first_type(msg: dict) -> str | None:
    events = msg.get("events") or ()
    return events[0].get("type") if events else None

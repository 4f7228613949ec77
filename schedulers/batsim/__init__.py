"""The Batsim v4 protocol adapter, scheduler side: typed messages, interval sets, the
pybatsim-style ``BatsimScheduler`` base class and the ZeroMQ ``serve`` loop.

This package is the only code that knows the wire format. ``endpoint`` (which imports zmq)
is not imported here, so in-process users pay nothing for it.
"""

from .intervals import format_intervals, parse_intervals
from .messages import Message, parse_message, serialize_message
from .scheduler import MIN_WAKEUP_DELAY, BatsimScheduler

__all__ = ["BatsimScheduler", "MIN_WAKEUP_DELAY", "Message", "parse_message",
           "serialize_message", "parse_intervals", "format_intervals"]

"""``python -m mrsched``: the ``mrsched`` command (a script-less environment, a profiler)."""

from mrsched.cli import entry

entry()

"""A platform's power model: SimGrid's ``wattage_per_state`` on its compute hosts, and the
sleep pstates Batsim's energy platforms add (``mrsched platform ... --wattage``; the library's
``with_wattage(xml, "95:190")`` on a generator's or a bundled platform's XML)."""

from __future__ import annotations

import re

from mrsched.errors import ConfigError

#: a storage host's ``wattage_per_state`` unless told (``with_wattage``'s decision)
STORAGE_WATTAGE = "0:0"
_HOST = re.compile(r'(<(host|cluster) id="([^"]*)"[^>]*?)(/>|>(.*?)</\2>)', re.S)


def _checked(wattage: str, field: str) -> str:
    parts = wattage.split(":")
    try:
        ok = len(parts) in (2, 3) and all(float(v) >= 0 for v in parts)
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"--{field} must be IDLE:ALLCORES or IDLE:EPSILON:ALLCORES watts, got "
                          f"{wattage!r}", field=field)
    return wattage


def with_wattage(xml: str, wattage: str | None, sleep: tuple | None = None,
                 storage: str = STORAGE_WATTAGE) -> str:
    """``xml`` with a ``wattage_per_state`` prop on every compute host (a host whose ``role``
    is absent or ``compute``, not named ``master...``) and every ``<cluster>`` (SimGrid gives
    a cluster's props to each of its hosts), ``storage`` on every storage host; unchanged when
    ``wattage`` is None. ConfigError on a value SimGrid would not read. Each value is given
    once per pstate (speed) of the host.

    Storage hosts need one too: under ``-E`` Batsim reads the energy of every machine but the
    master at the first submission, and SimGrid aborts on a host without wattage
    (``host_energy.cpp`` 536). Decision: they draw nothing by default (``0:0``), the power
    the scheduler manages being the compute nodes'.

    ``sleep`` (``sleep_states``): three more pstates after a compute host's own speeds, as
    Batsim's energy platforms write them: a sleep pstate (speed 1e-9Mf, ``W:W``), and the virtual
    switch-off and switch-on pstates at 1 / duration flop/s (Batsim runs 1 flop in them:
    ``src/pstate.cpp`` 17-84) drawing their watts loaded or not, named by a ``sleep_pstates``
    ``sleep:off:on`` property (``src/machines.cpp`` 89-210)."""
    if wattage is None:
        return xml
    wattage = _checked(wattage, "wattage")
    storage = _checked(storage, "storage-wattage")

    def add(m: re.Match) -> str:
        head, tag, name, body = m.group(1), m.group(2), m.group(3), m.group(5) or ""
        role = re.search(r'<prop id="role" value="([^"]*)"', body)
        role = role.group(1) if role else ""
        if role not in ("", "compute", "storage") or name.startswith("master"):
            return m.group(0)
        indent = xml[xml.rfind("\n", 0, m.start()) + 1:m.start()]
        speeds = re.search(r'speed="([^"]*)"', head)
        n = len(speeds.group(1).split(",")) if speeds is not None else 1
        watts = ", ".join([storage if role == "storage" else wattage] * n)
        prop = f'<prop id="wattage_per_state" value="{watts}"/>'
        if sleep is not None and role != "storage":
            if speeds is None:
                raise ConfigError(f"--sleep-wattage: host {name} has no speed attribute",
                                  field="sleep-wattage")
            asleep, off_s, off_w, on_s, on_w = sleep
            head = (head[:speeds.start(1)] + speeds.group(1)
                    + f", 1e-9Mf, {1.0 / off_s!r}f, {1.0 / on_s!r}f" + head[speeds.end(1):])
            watts = ", ".join([wattage] * n + [f"{w!r}:{w!r}" for w in (asleep, off_w, on_w)])
            prop = (f'<prop id="wattage_per_state" value="{watts}"/>\n{indent}  '
                    f'<prop id="sleep_pstates" value="{n}:{n + 1}:{n + 2}"/>')
        if m.group(4) == "/>":
            return f"{head}>\n{indent}  {prop}\n{indent}</{tag}>"
        return f"{head}>{body.rstrip()}\n{indent}  {prop}\n{indent}</{tag}>"
    return _HOST.sub(add, xml)

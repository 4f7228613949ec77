"""`mrsched platform ... --wattage IDLE:ALLCORES`: every compute host (and every <cluster>)
gets SimGrid's wattage_per_state; storage, PFS and master hosts none."""

from __future__ import annotations

import pytest

from mrsched.cli import main
from mrsched.simulator.energy import load_powers
from mrsched.simulator.platform import load_platform


@pytest.mark.parametrize("kind, args", [("dragonfly", []), ("iotree", ["--units", "2", "--nodes-per-unit", "3"]),
                                        ("cluster", ["--nodes", "4", "--storage", "1"])])
def test_compute_hosts_get_the_wattage(tmp_path, kind, args):
    out = tmp_path / f"{kind}.xml"
    assert main(["platform", kind, *args, "--wattage", "95:190", "-o", str(out)]) == 0
    platform = load_platform(str(out))
    hosts = platform.resources(None)
    powers = load_powers(platform, [h.name for h in hosts])
    for host, power in zip(hosts, powers):
        if host.role == "compute":
            assert (power.ranges[0].idle, power.ranges[0].max) == (95.0, 190.0), host.name
        else:
            assert power.ranges is None, host.name
    assert any(h.role != "compute" for h in hosts)


def test_without_the_flag_nothing_changes_and_a_bad_value_is_refused(tmp_path, capsys):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    assert main(["platform", "cluster", "--nodes", "2", "-o", str(a)]) == 0
    assert "wattage" not in a.read_text()
    assert main(["platform", "cluster", "--nodes", "2", "--wattage", "95", "-o", str(b)]) != 0
    assert "--wattage must be IDLE:ALLCORES" in capsys.readouterr().err

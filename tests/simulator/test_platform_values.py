"""Issue 43, platforms: every number a platform gives is finite and in its domain, refused
otherwise in one line naming the file, the host / link / zone id and the attribute; a file
nested deeper than any real platform is refused by name, never a RecursionError."""

from __future__ import annotations

import pytest

from mrsched.cli import main
from mrsched.errors import ConfigError, PlatformError, ProtocolError, WorkloadError
from mrsched.limits import MAX_DEPTH
from mrsched.schedulers.model.cluster import cluster_from_simulation_begins
from mrsched.simulator.platform import load_platform
from mrsched.units import parse_bandwidth, parse_size, parse_speed, parse_time
from mrsched.workloads.platform_info import read_platform_info

HEAD = '<?xml version="1.0"?>\n<platform version="4.1">\n'
MASTER = '<host id="master" speed="1Gf"><prop id="role" value="master"/></host>'


def _write(tmp_path, zone_body: str, name: str = "p.xml"):
    path = tmp_path / name
    path.write_text(f'{HEAD}<zone id="root" routing="Full">\n{zone_body}\n{MASTER}</zone>\n</platform>\n')
    return path


BB = '<host id="bb_0" speed="1Gf"><prop id="role" value="storage"/><prop id="bb_capacity" value="{}"/></host>'

# (zone body, what the message must name: id, field, text)
CASES = [
    ('<host id="node_0" speed="1e400f"/>', "host 'node_0'", "speed", "beyond the range of a double"),
    ('<host id="node_0" speed="1e300Ef"/>', "host 'node_0'", "speed", "beyond the range of a double"),
    ('<host id="node_0" speed="1Gf,-1Gf"/>', "host 'node_0'", "speed", "negative speed"),
    ('<host id="n" speed="1Gf"/>' + BB.format("-4"), "host 'bb_0'", "bb_capacity", "must be at least 0"),
    ('<host id="n" speed="1Gf"/>' + BB.format("inf"), "host 'bb_0'", "bb_capacity", "not a finite number"),
    ('<host id="n" speed="1Gf"/>' + BB.format("nan"), "host 'bb_0'", "bb_capacity", "not a finite number"),
    ('<host id="n" speed="1Gf"/>' + BB.format("1e999"), "host 'bb_0'", "bb_capacity", "not a finite number"),
    ('<host id="n" speed="1Gf"/>' + BB.format("40GB"), "host 'bb_0'", "bb_capacity", "not a number"),
    ('<host id="n" speed="1Gf"><prop id="gpus" value="2.5"/></host>', "host 'n'", "gpus", "not a whole number"),
    ('<host id="n" speed="1Gf"><prop id="cores" value="0"/></host>', "host 'n'", "cores", "at least 1"),
    ('<host id="n" speed="1Gf"><prop id="node_bw" value="0"/></host>', "host 'n'", "node_bw", "above 0"),
    ('<host id="n" speed="1Gf"/><link id="l" bandwidth="1e400Bps"/>', "link 'l'", "bandwidth",
     "beyond the range of a double"),
    ('<host id="n" speed="1Gf"/><link id="l" bandwidth="1GBps" latency="1e400s"/>', "link 'l'", "latency",
     "beyond the range of a double"),
    ('<host id="n" speed="1Gf"/><link id="l" bandwidth="-1GBps"/>', "link 'l'", "bandwidth", "negative value"),
    ('<host id="n" speed="1Gf"/><link id="l" bandwidth="0"/>', "link 'l'", "bandwidth", "positive finite"),
]


@pytest.mark.parametrize("body, who, field, text", CASES)
def test_bad_values_are_refused_by_host_and_field(tmp_path, body, who, field, text):
    path = _write(tmp_path, body)
    with pytest.raises(PlatformError) as err:
        load_platform(path)
    message = str(err.value)
    assert "\n" not in message and text in message and who in message
    assert err.value.file == str(path) and err.value.field == field and err.value.line is not None


def test_cluster_values_name_the_cluster(tmp_path):
    path = tmp_path / "c.xml"
    path.write_text(f'{HEAD}<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1GBps" '
                    'lat="1e999s"/>\n</platform>\n')
    with pytest.raises(PlatformError, match="cluster 'c': time '1e999s'") as err:
        load_platform(path)
    assert err.value.field == "lat"


@pytest.mark.parametrize("key, value, text", [("network/loopback-bw", "0", "above 0"),
                                              ("network/TCP-gamma", "inf", "finite"),
                                              ("network/loopback-lat", "-1", "at least 0")])
def test_config_values(tmp_path, key, value, text):
    path = tmp_path / "cfg.xml"
    path.write_text(f'{HEAD}<config><prop id="{key}" value="{value}"/></config>\n'
                    f'<zone id="root" routing="Full"><host id="n" speed="1Gf"/>{MASTER}</zone>\n</platform>\n')
    with pytest.raises(PlatformError, match=text) as err:
        load_platform(path)
    assert err.value.field == key


def _nested(tmp_path, depth: int):
    path = tmp_path / f"deep{depth}.xml"
    text = HEAD + "".join(f'<zone id="z{i}" routing="Full">\n' for i in range(depth))
    text += '<host id="h" speed="1Gf"/>\n' + "</zone>\n" * depth + "</platform>\n"
    path.write_text(text)
    return path


def test_three_thousand_nested_zones_are_refused_by_name(tmp_path):
    path = _nested(tmp_path, 3000)
    with pytest.raises(PlatformError) as err:
        load_platform(path)
    assert f"more than {MAX_DEPTH}" in str(err.value) and err.value.element == "zone"
    assert f"'z{MAX_DEPTH - 1}'" in str(err.value)   # the first zone too deep, by id
    with pytest.raises(WorkloadError, match=f"nested more than {MAX_DEPTH}"):
        read_platform_info(path)   # the generators' reader: the same limit


def test_nesting_up_to_the_limit_loads(tmp_path):
    platform = load_platform(_nested(tmp_path, MAX_DEPTH - 2))   # + <platform> + <host>
    assert [h.name for h in platform.compute_hosts()] == ["h"]
    assert read_platform_info(_nested(tmp_path, MAX_DEPTH - 2)).compute_nodes == 1


def test_generators_reader_applies_the_same_rule(tmp_path):
    with pytest.raises(WorkloadError, match="host 'bb_0': property 'bb_capacity' 'inf' is not a finite"):
        read_platform_info(_write(tmp_path, '<host id="n" speed="1Gf"/>' + BB.format("inf")))
    with pytest.raises(WorkloadError, match="host 'n'.*beyond the range"):
        read_platform_info(_write(tmp_path, '<host id="n" speed="1e400f"/>'))
    for speed in ("-1.0", "0"):   # found by the fuzz suite's long run
        with pytest.raises(WorkloadError, match="host 'n': a compute host needs a positive speed"):
            read_platform_info(_write(tmp_path, f'<host id="n" speed="{speed}"/>'))


@pytest.mark.parametrize("parse, text", [(parse_speed, "1e400f"), (parse_bandwidth, "1e400"),
                                         (parse_size, "1e300EB"), (parse_time, "1e306w"),
                                         (parse_size, float("inf")), (parse_time, float("nan"))])
def test_units_never_return_infinity(parse, text):
    with pytest.raises(ConfigError):
        parse(text)


@pytest.mark.parametrize("value", ["inf", "-4", "nan", "x"])
def test_serve_cluster_view_refuses_bad_capacities(value):
    begins = {"compute_resources": [{"id": 0, "name": "n0", "properties": {}}],
              "storage_resources": [{"id": 1, "name": "bb", "properties": {"role": "storage",
                                                                          "bb_capacity": value}}]}
    with pytest.raises(ProtocolError, match="bb_capacity") as err:
        cluster_from_simulation_begins(begins)
    assert err.value.element == "bb"


def test_run_with_infinite_speed_fails_in_one_line(tmp_path, capsys):
    """The issue's case: ``speed="1e400f"`` ran 'ok' with every job killed at its walltime."""
    plat = _write(tmp_path, '<host id="node_0" speed="1e400f"/>')
    wl = tmp_path / "w.json"
    wl.write_text('{"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "walltime": 10, "res": 1, '
                  '"profile": "p"}], "profiles": {"p": {"type": "delay", "delay": 5}}}')
    code = main(["run", "-p", str(plat), "-w", str(wl), "--policy", "fcfs", "-o", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "run").exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "host 'node_0'" in lines[0] and "'speed'" in lines[0], err


@pytest.mark.parametrize("watts", ["100:inf", "nan:200", "-5:100", "100:1e999"])
def test_wattages_are_finite_and_not_negative(tmp_path, watts):
    from mrsched.simulator.energy import load_powers

    platform = load_platform(_write(tmp_path, f'<host id="n" speed="1Gf"><prop id="wattage_per_state" '
                                              f'value="{watts}"/></host>'))
    with pytest.raises(PlatformError, match="host 'n': invalid power value.*finite numbers >= 0") as err:
        load_powers(platform, ["n"])
    assert err.value.field == "wattage_per_state"

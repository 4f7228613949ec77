"""Shared fixtures of the workload tests: small SWF traces written on the fly, seed 001's trace from
../shared when present, bundled platforms. Imported by name in each test module (not a conftest.py:
several conftest modules named ``conftest`` shadow each other for ``from conftest import ...``)."""

from __future__ import annotations

from pathlib import Path

import pytest

HEADER = """; Version: 2.2
; Computer: test machine
; MaxNodes: 8
; MaxProcs: 8
;
"""

# job submit wait run procs cpu mem req_procs req_time req_mem status user group exe queue part prec think
RECORDS = """\
 1   100  0   50   2 -1 -1   2   60  -1 1 1 1 -1 -1 -1 -1 -1
 2   160  0  600   4 -1 -1   4  900  -1 1 2 1 -1 -1 -1 -1 -1
 3   200  0    0   1 -1 -1   1  120  -1 0 1 1 -1 -1 -1 -1 -1
 4   250  0   30  -1 -1 -1  -1   60  -1 5 3 1 -1 -1 -1 -1 -1
 5   300  0 4000  16 -1 -1  16 3600  -1 1 1 1 -1 -1 -1 -1 -1
 6   400  0  100   8 -1 -1   8   -1  -1 1 1 1 -1 -1 -1 -1 -1
 7  1000  0  200   1 -1 -1   1  300  -1 0 2 1 -1 -1 -1 -1 -1
 8  2000  0 7200   3 -1 -1   3 7200  -1 1 4 1 -1 -1 -1 -1 -1
"""


@pytest.fixture
def small_swf(tmp_path) -> Path:
    path = tmp_path / "small.swf"
    path.write_text(HEADER + RECORDS)
    return path


@pytest.fixture(scope="session")
def kth_swf(shared_file) -> Path:
    return shared_file("data", "KTH-SP2-1996-2.1-cln.swf")


@pytest.fixture(scope="session")
def df96_info():
    from mrsched.platforms.bundled import bundled_path
    from mrsched.workloads.platform_info import read_platform_info

    return read_platform_info(bundled_path("dragonfly96.xml"))


@pytest.fixture(scope="session")
def cluster16_info():
    from mrsched.platforms.bundled import bundled_path
    from mrsched.workloads.platform_info import read_platform_info

    return read_platform_info(bundled_path("cluster16.xml"))


def llnl_trace(shared_file, name: str) -> Path:
    """A compressed LLNL trace of ../shared/data (absent: the suite's skip-or-fail rule)."""
    return shared_file("data", f"{name}.swf.gz")


@pytest.fixture(scope="session")
def atlas_swf(shared_file) -> Path:
    """LLNL Atlas: 1,152 nodes x 8 cores, sizes in processors (read in place, compressed)."""
    return llnl_trace(shared_file, "LLNL-Atlas-2006-2.1-cln")


@pytest.fixture(scope="session")
def thunder_swf(shared_file) -> Path:
    """LLNL Thunder: 1,002 nodes x 4 cores, sizes in processors."""
    return llnl_trace(shared_file, "LLNL-Thunder-2007-1.1-cln")


def write_platform(path: Path, nodes: int, cores: int, *, per_core: bool, declare_cores: bool = True) -> Path:
    """A flat SimGrid platform of ``nodes`` compute nodes in either unit convention: whole-node
    hosts (optional ``cores`` property) or one host per core (``resource="core"``, ``node``)."""
    hosts = ['  <host id="master" speed="1Gf"><prop id="role" value="master"/></host>']
    for n in range(nodes):
        if per_core:
            for c in range(cores):
                hosts.append(f'  <host id="n{n}_c{c}" speed="1Gf"><prop id="resource" value="core"/>'
                             f'<prop id="node" value="n{n}"/><prop id="cores" value="{cores}"/>'
                             f'<prop id="gpus" value="0"/></host>')
        else:
            prop = f'<prop id="cores" value="{cores}"/>' if declare_cores else ""
            hosts.append(f'  <host id="n{n}" speed="1Gf">{prop}</host>')
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                    '<platform version="4.1">\n <zone id="AS0" routing="Full">\n' + "\n".join(hosts)
                    + "\n </zone>\n</platform>\n")
    return path

"""Per-core CPU+GPU platforms (seed 002, DESIGN.md "CPU+GPU machines"): properties, Batsim
order, Machine-L written with cluster zones and loaded by the engine."""

from __future__ import annotations


from mrsched.cli import main
from mrsched.platforms.cluster import MAX_HOSTS, generate_cluster
from mrsched.schedulers.model.cluster import cluster_from_simulation_begins
from mrsched.schedulers.model.nodes import NodeView
from mrsched.simulator.platform import load_platform


def test_small_per_core_cluster_is_explicit_with_node_properties(tmp_path):
    g = generate_cluster(nodes=3, cores=4, gpus=2, pfs=False)
    hosts = {h.name: h.properties for h in g.description.compute_hosts()}
    assert len(hosts) == 12
    assert hosts["node_2_core_3"] == {"resource": "core", "node": "node_2", "cores": "4", "gpus": "2"}
    assert 'routing="Full"' in g.xml
    path = tmp_path / "p.xml"
    path.write_text(g.xml)
    plat = load_platform(str(path))
    assert [h.name for h in plat.compute_hosts()][:5] == ["node_0_core_0", "node_0_core_1", "node_0_core_2",
                                                        "node_0_core_3", "node_1_core_0"]


def test_node_hosts_keep_the_former_cores_property():
    g = generate_cluster(nodes=2, cores=8, gpus=1, node_hosts=True, pfs=False)
    assert {h.name: h.properties for h in g.description.compute_hosts()} == {
        "node_0": {"gpus": "1", "cores": "8"}, "node_1": {"gpus": "1", "cores": "8"}}


def test_machine_l_is_written_with_cluster_zones_and_loads(tmp_path, capsys):
    out = tmp_path / "ml.xml"
    assert main(["platform", "cluster", "--nodes", "1024", "--cores", "8", "--gpus", "2", "-o", str(out)]) == 0
    assert "8192 compute" in capsys.readouterr().out
    text = out.read_text()
    assert 1024 * 8 > MAX_HOSTS and "<route " not in text.split('<zone id="services"')[0]
    assert text.count("<cluster ") == 1024
    plat = load_platform(str(out))
    compute = plat.compute_hosts()
    assert len(compute) == 8192
    # a route between two nodes crosses both cores' links and both node uplinks
    names = [lk.name for lk in plat.route("node_0_core_0", "node_5_core_3").links]
    assert names == ["node_0_link_0_UP", "node_0_uplink", "node_5_uplink", "node_5_link_3_DOWN"]
    # the scheduler's node view from what Batsim reports (ids in host-name order)
    data = {"compute_resources": [{"id": k, "name": h.name, "properties": dict(h.properties)}
                                  for k, h in enumerate(plat.resources()) if h.role == "compute"]}
    view = NodeView.from_cluster(cluster_from_simulation_begins(data))
    assert view.nb_nodes == 1024 and view.names[:3] == ["node_0", "node_1", "node_2"]
    assert {len(c) for c in view.cores} == {8} and set(view.gpus) == {2}

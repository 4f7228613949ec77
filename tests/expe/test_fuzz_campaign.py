"""Fuzz (issue 43 item 6): the campaign reader (``expe/campaign.py`` ``load_campaign`` and
``plan_runs``) over generated campaign files: near-valid mappings of its keys with fuzzed
values (as YAML), and raw text. Invariant (tests/fuzzing.py): a clean ConfigError naming the
file and key, or a campaign whose runs are as many as it lists, with unique run ids."""

from __future__ import annotations

from hypothesis import given, strategies as st

from fuzzing import budget, clean
from mrsched.expe.campaign import load_campaign, plan_runs

SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**4), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(max_size=6), st.sampled_from(["1-2", "40GB", ".inf", "fcfs", "x/y", "x:y", "../..",
                                                         "/tmp", "embedded", "batsim"]))
ANY = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3)
                   | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
POLICY = st.one_of(st.sampled_from(["fcfs", "filler", "sjf-bb", "fcfs-easy", "nope", "x/y", "x:y"]),
                   st.fixed_dictionaries({"policy": st.sampled_from(["fcfs", "fcfs-easy", "sjf-bb"])},
                                         optional={"options": st.dictionaries(
                                             st.sampled_from(["depth", "period", "knowledge_noise", "order", "bad"]),
                                             SCALAR | st.lists(SCALAR, max_size=3), max_size=2),
                                             "name": st.sampled_from(["a", "b", "x/y", "x:y", ""]) | SCALAR}))


@st.composite
def campaign(draw, platform, workload):
    data = {"name": draw(st.sampled_from(["c", "fuzz"]) | SCALAR),
            "platforms": draw(st.lists(st.sampled_from([platform, {"path": platform}, "missing.xml"])
                                       | st.sampled_from([platform]) | ANY, min_size=1, max_size=2)),
            "workloads": draw(st.lists(st.sampled_from([workload, {"path": workload, "name": "w"}])
                                       | st.sampled_from([workload]) | ANY, min_size=1, max_size=2)),
            "policies": draw(st.lists(POLICY | POLICY | ANY, min_size=1, max_size=3))}
    for key in draw(st.lists(st.sampled_from(["seeds", "timeout", "parallelism", "engine", "output",
                                              "report", "description", "seeds", "timeout", "bogus"]),
                             max_size=2, unique=True)):
        data[key] = draw(st.just({"seeds": [1, 2], "timeout": 60, "parallelism": 1, "engine": "embedded",
                                          "output": "out", "report": False}.get(key, "x")) | ANY)
    return data


@budget(60)
@given(st.data())
def test_fuzz_campaign_files(tmp_path_factory, data):
    import yaml

    from mrsched.platforms.cluster import generate_cluster

    folder = tmp_path_factory.mktemp("c")
    (folder / "p.xml").write_text(generate_cluster(nodes=4, storage=1, bb_capacity="10GB").xml)
    (folder / "w.json").write_text('{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}],'
                                   ' "profiles": {"d": {"type": "delay", "delay": 5}}}')
    raw = data.draw(campaign(str(folder / "p.xml"), str(folder / "w.json")))
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True) if data.draw(st.integers(0, 9)) else
                    data.draw(st.text(max_size=80)))
    loaded = clean(load_campaign, path)
    if loaded is None:
        return
    runs = clean(plan_runs, loaded)
    if runs is None:
        return
    ids = [run.spec.run_id for run in runs]
    assert len(ids) == len(set(ids)), ids   # no campaign ends with fewer runs than it lists

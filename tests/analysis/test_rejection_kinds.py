"""Issue 41 item 5: rejected jobs grouped by kind of reason (the reason with its numbers
named), with a count and one example each, in the manifest and the run's summary line."""

from __future__ import annotations

from mrsched.analysis.rejections import (group_rejections, kind_example, rejection_kind,
                                         rejection_kinds, rejection_values, rejections_line)

BB = "asks {} bytes of burst buffer per node, the largest storage node holds 40000000000"
LEAF = ("asks {} resources, more than the leaf partitions below instance 0.{} can hold "
        "(seed 004 Sect. 5.3.1: every leaf a job may reach must fit it)")


def test_numbers_are_named_in_order_and_citations_stay():
    assert rejection_kind(BB.format(10**15)) == (
        "asks N bytes of burst buffer per node, the largest storage node holds M")
    assert rejection_kind(LEAF.format(40, 3)) == (
        "asks N resources, more than the leaf partitions below instance M can hold "
        "(seed 004 Sect. 5.3.1: every leaf a job may reach must fit it)")
    assert rejection_kind("asks 1.5e+09 B/s in all (12 nodes x 1.25e+08), the core level "
                          "carries 4.32e+11 B/s") == (
        "asks N B/s in all (M nodes x K), the core level carries L B/s")
    assert rejection_kind("asks 8 cores on 1-3 nodes") == "asks N cores on M-K nodes"
    # digits inside names are names: node_8, seed002
    assert rejection_kind("node_8 of seed002 has 3") == "node_8 of seed002 has N"
    assert rejection_values(LEAF.format(40, 3)) == "N = 40, M = 0.3"
    assert rejection_values("no reason given") == ""


def test_four_hundred_distinct_reasons_of_two_kinds_are_two_entries():
    """The hierarchical run of issue 41 had 400 keys in ``rejected.reasons`` for two kinds."""
    rejected = [(str(j), BB.format(10**12 + j) if j % 4 else LEAF.format(100 + j, j % 7))
                for j in range(400)]
    assert len({reason for _, reason in rejected}) == 400
    kinds = group_rejections(rejected)
    assert [k["count"] for k in kinds] == [300, 100]
    assert kinds[0]["kind"].startswith("asks N bytes of burst buffer")
    assert kinds[0]["example"] == BB.format(10**12 + 1) and kinds[0]["job"] == "1"
    assert kinds[1]["example"] == LEAF.format(100, 0) and kinds[1]["job"] == "0"
    assert kind_example(kinds[0]) == "job 1: N = 1000000000001, M = 40000000000"


def test_old_manifests_reasons_are_grouped_when_read():
    old = {"count": 3, "jobs": 9, "reasons": {BB.format(5): 2, BB.format(7): 1}}
    assert rejection_kinds(old) == [{"kind": rejection_kind(BB.format(5)), "count": 3,
                                     "example": BB.format(5), "job": ""}]
    assert rejection_kinds(None) == [] and rejection_kinds({"kinds": "junk"}) == []


def test_summary_line_one_example_per_kind_and_the_rest_counted():
    kinds = group_rejections([("1", "asks 5 nodes, the machine has 4"),
                              ("2", "asks 9 nodes, the machine has 4"),
                              ("3", BB.format(10**15)), ("4", "no reason given"),
                              ("5", "asks 3 of 'licences', the machine has 2")])
    line = rejections_line({"count": 5, "jobs": 10, "kinds": kinds}, kinds_shown=3)
    assert "\n" not in line
    assert line.startswith("5 job(s) rejected: asks N nodes, the machine has M (2 jobs, e.g. job 1: "
                           "N = 5, M = 4); ")
    assert "(1 job, e.g. job 3: N = 1000000000000000, M = 40000000000)" in line
    assert line.endswith("; and 1 more kind(s), see manifest.json")
    assert rejections_line({"count": 0, "jobs": 3, "kinds": []}) == ""

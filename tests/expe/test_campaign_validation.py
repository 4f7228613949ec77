"""Bad campaign files are refused before anything runs: one ConfigError naming the file, the
key and a suggestion; nothing is written to the campaign directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrsched.cli import main
from mrsched.errors import ConfigError
from mrsched.expe.campaign import load_campaign, parse_seeds, plan_runs


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "camp.yaml"
    path.write_text(text)
    return path


@pytest.fixture()
def good(tmp_path, inputs) -> str:
    return f"""
name: tiny
seeds: [1, 2]
platforms: [{inputs['platform']}]
workloads: [{inputs['workload']}]
policies:
  - fcfs
  - {{policy: fcfs-easy, options: {{order: [fcfs, sjf]}}}}
"""


def refused(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_campaign(path)
    err = info.value
    assert err.file == str(path)
    return err


def test_good_file_expands_without_running(tmp_path, good):
    campaign = load_campaign(write(tmp_path, good))
    ids = [r.spec.run_id for r in plan_runs(campaign)]
    # no policy takes a seed and the workload is a file: each combination runs once
    assert ids == ["fcfs-platform-workload", "fcfs-easy_order=fcfs-platform-workload",
                   "fcfs-easy_order=sjf-platform-workload"]
    assert campaign.output == (tmp_path / "results" / "tiny").resolve()
    assert not campaign.output.exists()


def test_unknown_policy_suggests(tmp_path, good):
    err = refused(write(tmp_path, good.replace("- fcfs\n", "- fcfs-esay\n")))
    assert err.field == "policies[0]"
    assert "unknown policy 'fcfs-esay'" in str(err) and "did you mean 'fcfs-easy'" in str(err)


def test_a_policy_mapping_without_policy_says_what_name_is(tmp_path, good):
    """``{name: sjf-bb}`` reads naturally but ``name`` is the report's label: the error says
    which key holds the policy."""
    err = refused(write(tmp_path, good.replace("{policy: fcfs-easy", "{name: fcfs-easy")))
    assert err.field == "policies[1].policy"
    assert "needs 'policy'" in str(err) and "'name' only labels it" in str(err)


def test_unknown_option_suggests(tmp_path, good):
    err = refused(write(tmp_path, good.replace("order:", "ordr:")))
    assert err.field == "policies[1].options.ordr"
    assert "did you mean 'order'" in str(err)


def test_unknown_top_level_key_suggests(tmp_path, good):
    err = refused(write(tmp_path, good.replace("seeds:", "seed:")))
    assert err.field == "seed" and "did you mean 'seeds'" in str(err)


def test_missing_input_file(tmp_path, good, inputs):
    err = refused(write(tmp_path, good.replace(str(inputs["workload"]), "nowhere.json")))
    assert err.field == "workloads[0].path" and "nowhere.json" in str(err)


def test_bad_yaml_names_line(tmp_path):
    err = refused(write(tmp_path, "name: x\npolicies: [fcfs\nplatforms: {\n"))
    assert "bad YAML" in str(err) and err.line is not None


def test_unknown_generator_and_flag(tmp_path, good, inputs):
    text = good.replace(f"[{inputs['platform']}]", "[{generate: dragonfy}]")
    err = refused(write(tmp_path, text))
    assert err.field == "platforms[0].generate" and "did you mean 'dragonfly'" in str(err)
    text = good.replace(f"[{inputs['platform']}]", "[{generate: cluster, nodez: 4}]")
    err = refused(write(tmp_path, text))
    assert err.field == "platforms[0].nodez" and "did you mean 'nodes'" in str(err)


def test_bad_values(tmp_path, good):
    for old, new, field in [("seeds: [1, 2]", "seeds: one", "seeds"),
                            ("name: tiny", "name: tiny\nengine: batsm", "engine"),
                            ("name: tiny", "name: tiny\ntimeout: -3", "timeout"),
                            ("name: tiny", "name: tiny\nparallelism: 0", "parallelism")]:
        err = refused(write(tmp_path, good.replace(old, new)))
        assert err.field == field, (new, err)


def test_duplicate_names_refused(tmp_path, good):
    err = refused(write(tmp_path, good.replace("  - fcfs\n", "  - fcfs\n  - fcfs\n")))
    assert "two policy entries are named 'fcfs'" in str(err)


def test_cli_prints_one_line_and_exits_2(tmp_path, good, capsys):
    path = write(tmp_path, good.replace("- fcfs\n", "- fcfs-esay\n"))
    assert main(["campaign", "run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "did you mean" in err[0]
    assert not (tmp_path / "results").exists()


def test_parse_seeds():
    assert parse_seeds("1-3", "f") == [1, 2, 3]
    assert parse_seeds("1,4-5", "f") == [1, 4, 5]
    assert parse_seeds(7, "f") == [7]
    assert parse_seeds([2, 3], "f") == [2, 3]
    with pytest.raises(ConfigError):
        parse_seeds([1, "x"], "f")


def test_bad_option_value_refused_before_running(tmp_path, good):
    err = refused(write(tmp_path, good.replace("[fcfs, sjf]", "[fcfs, sjff]")))
    assert err.field == "policies[1].options.order" and "sjff" in str(err)
    err = refused(write(tmp_path, good.replace("[fcfs, sjf]", "[]")))
    assert err.field == "policies[1].options.order" and "empty list" in str(err)


def test_names_that_map_to_one_run_id_are_refused(tmp_path, good):
    """`x/y` and `x:y` both become the run id `x-y-...`: one run would never be done."""
    text = good.replace("  - fcfs\n", "  - {policy: fcfs, name: 'x/y'}\n  - {policy: filler, name: 'x:y'}\n")
    with pytest.raises(ConfigError, match="two runs would share the id 'x-y-.*policy 'x/y'.*policy 'x:y'") as info:
        plan_runs(load_campaign(write(tmp_path, text)))
    assert info.value.file == str(tmp_path / "camp.yaml")


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path, good):
    err = refused(write(tmp_path, good.replace("name: tiny\n", "name: tiny\nname: other\n")))
    assert "key 'name' is given twice (first on line 2)" in str(err) and err.line == 3
    err = refused(write(tmp_path, good.replace("{policy: fcfs-easy,", "{policy: fcfs-easy, policy: fcfs,")))
    assert "key 'policy' is given twice" in str(err)


def test_a_platform_the_engine_refuses_stops_the_campaign_before_any_run(tmp_path, good,
                                                                           inputs, capsys):
    platform = Path(inputs["platform"])
    broken = tmp_path / "broken.xml"
    text = platform.read_text()
    cut = text.rindex("</zone>")
    broken.write_text(text[:cut] + '<route src="nowhere" dst="nowhere_else"><link_ctn id="l"/>'
                      "</route>" + text[cut:])
    path = write(tmp_path, good.replace(str(inputs["platform"]), str(broken)))
    assert main(["campaign", "run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(path) in err[0] and "broken.xml" in err[0] and "unknown src 'nowhere'" in err[0]
    assert not list((tmp_path / "results").rglob("manifest.json"))

"""Issue 41 item 8: every manifest records the code that made it: the git commit and whether
the tree was modified, or the installed version outside a git checkout."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mrsched.expe import manifest as mf


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def checkout(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the checkout case cannot be built")
    root = tmp_path / "src"
    (root / "mrsched").mkdir(parents=True)
    (root / "mrsched" / "__init__.py").write_text("")
    (root / ".gitignore").write_text("results/\n")
    _git(root.parent, "init", "-q", str(root))
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    mf._provenance.cache_clear()
    yield root
    mf._provenance.cache_clear()


def test_a_clean_checkout_records_its_commit(checkout):
    got = mf.provenance(checkout)
    assert got == {"mrsched": mf._version(), "source": "git", "commit": _git(checkout, "rev-parse", "HEAD"),
                   "modified": False}


@pytest.mark.parametrize("change", ["edit", "untracked"])
def test_a_modified_tree_says_so(checkout, change):
    if change == "edit":
        (checkout / "mrsched" / "__init__.py").write_text("X = 1\n")
    else:   # a new policy module changes what runs, though git does not track it yet
        (checkout / "mrsched" / "new_policy.py").write_text("")
    assert mf.provenance(checkout)["modified"] is True


def test_ignored_files_do_not_count_as_modified(checkout):
    (checkout / "results").mkdir()
    (checkout / "results" / "out.csv").write_text("1\n")
    assert mf.provenance(checkout)["modified"] is False


def test_outside_a_checkout_the_installed_version(tmp_path):
    mf._provenance.cache_clear()
    assert mf.provenance(tmp_path) == {"mrsched": mf._version(), "source": "installed"}


def test_a_folder_inside_someone_elses_repository_is_installed(checkout):
    """A virtualenv kept inside a repository: site-packages is in its tree, not its top."""
    inner = checkout / ".venv" / "site-packages"
    inner.mkdir(parents=True)
    assert mf.provenance(inner)["source"] == "installed"


def test_without_git_the_installed_version(checkout, monkeypatch):
    monkeypatch.setenv("PATH", "")
    mf._provenance.cache_clear()
    assert mf.provenance(checkout) == {"mrsched": mf._version(), "source": "installed"}


def test_run_manifests_carry_it(tmp_path, inputs, engine_env):
    from mrsched.cli import main
    from mrsched.expe.manifest import read_manifest

    out = tmp_path / "r"
    assert main(["run", "-p", str(inputs["platform"]), "-w", str(inputs["workload"]),
                 "--policy", "fcfs", "--out", str(out), "--timeout", "60"]) == 0
    got = read_manifest(out)["provenance"]
    assert got == mf.provenance()
    assert got["mrsched"] == read_manifest(out)["versions"]["mrsched"]

"""The docker engine against a real daemon: collected only when ``docker/ci-test.sh`` (or a
user who has started a daemon and built both images, README "Docker") sets
``MRSCHED_DOCKER_TESTS=1``. The default suite needs no Docker (tests/expe/test_docker_files.py
checks the same files without a daemon) and so neither skips nor fails here."""

from __future__ import annotations

import os

if os.environ.get("MRSCHED_DOCKER_TESTS") != "1":
    collect_ignore_glob = ["test_*.py"]

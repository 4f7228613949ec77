#!/usr/bin/env bash
# Build the scheduler image and the Batsim stand-in image with no image or package registry
# reachable from the Docker daemon: the base image comes from mmdebstrap (Debian bookworm
# minbase + python3 3.11, apt on the host), Python packages from a wheelhouse downloaded on
# the host by pip. Talks to whatever daemon DOCKER_HOST names.
#
#   bash docker/build-offline.sh            # -> mrsched:latest, mrsched-batsim-standin:latest
#
# Environment: MRSCHED_IMAGE, STANDIN_IMAGE, BASE_IMAGE (image names);
# MRSCHED_DOCKER_CACHE: folder keeping the base rootfs between runs (default
# ~/.cache/mrsched-docker; empty: no cache). PYTHON: the host python with pip (default python3).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
MRSCHED_IMAGE=${MRSCHED_IMAGE:-mrsched:latest}
STANDIN_IMAGE=${STANDIN_IMAGE:-mrsched-batsim-standin:latest}
BASE_IMAGE=${BASE_IMAGE:-mrsched-base:bookworm}
PYTHON=${PYTHON:-python3}
cache=${MRSCHED_DOCKER_CACHE-$HOME/.cache/mrsched-docker}
t0=$SECONDS
say() { echo "build-offline: $* ($((SECONDS - t0)) s)" >&2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/mrsched-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. The base image: Debian bookworm minbase with python3 + python3-venv (3.11, as the wheels).
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null || { say "mmdebstrap is not installed (apt-get install mmdebstrap)"; exit 1; }
    rootfs=$work/rootfs.tar
    # The rootfs depends only on these arguments: cached as is (a stale one only lacks
    # Debian point updates). Written to a temporary name first: never a truncated cache.
    key="bookworm-minbase-python3-venv.tar"
    if [ -n "$cache" ] && [ -s "$cache/$key" ]; then
        say "base rootfs from the cache $cache/$key"
        rootfs=$cache/$key
    else
        say "base rootfs: mmdebstrap bookworm (apt)"
        mmdebstrap --quiet --variant=minbase --include=python3,python3-venv bookworm "$rootfs"
        if [ -n "$cache" ]; then
            mkdir -p "$cache" && cp "$rootfs" "$cache/$key.tmp.$$" && mv "$cache/$key.tmp.$$" "$cache/$key"
        fi
    fi
    docker import "$rootfs" "$BASE_IMAGE" >/dev/null
fi

# 2. The build context: only what the Dockerfile copies, plus the wheelhouse.
ctx=$work/context
mkdir -p "$ctx/docker/wheelhouse"
(cd "$repo" && tar --exclude=__pycache__ --exclude='*.pyc' --exclude='*.so' --exclude=studies/results -cf - pyproject.toml README.md \
    mrsched schedulers simulator platforms workloads expe analysis studies docker/Dockerfile) \
    | tar -xf - -C "$ctx"
# Wheels for CPython 3.11 on glibc x86_64 whatever the host's python: mrsched's dependencies
# as pyproject lists them, and the build backend pip needs to build mrsched itself.
mapfile -t deps < <("$PYTHON" - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
data = tomllib.load(open(sys.argv[1], "rb"))
print("\n".join(data["project"]["dependencies"] + data["build-system"]["requires"]))
PY
)
# pip does not widen a manylinux tag to the older ones a glibc 2.36 system also runs: list them.
platforms=()
for minor in $(seq 36 -1 17); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
say "wheelhouse: pip download ${#deps[@]} requirements (+ their dependencies)"
"$PYTHON" -m pip download --disable-pip-version-check --only-binary=:all: \
    --python-version 3.11 --implementation cp --abi cp311 "${platforms[@]}" \
    -d "$ctx/docker/wheelhouse" "${deps[@]}" >"$work/pip.log" 2>&1 \
    || { cat "$work/pip.log" >&2; say "pip download failed"; exit 1; }

# 3. The two images (the legacy builder and BuildKit both work: no registry is contacted
# since both bases are local).
say "image $MRSCHED_IMAGE"
docker build --quiet -f "$ctx/docker/Dockerfile" -t "$MRSCHED_IMAGE" \
    --build-arg BASE_IMAGE="$BASE_IMAGE" \
    --build-arg PIP_INSTALL_OPTIONS="--no-index --find-links /wheelhouse" "$ctx" >/dev/null
say "image $STANDIN_IMAGE"
docker build --quiet -t "$STANDIN_IMAGE" --build-arg MRSCHED_IMAGE="$MRSCHED_IMAGE" \
    "$repo/docker/standin" >/dev/null
docker run --rm --entrypoint mrsched "$MRSCHED_IMAGE" --version
say "done"

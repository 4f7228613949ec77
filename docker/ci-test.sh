#!/usr/bin/env bash
# The docker engine, tested for real with no image or package registry reachable from the
# daemon: installs Docker if needed (Debian's docker.io + docker-compose v1 + mmdebstrap),
# starts a private dockerd (data, exec root and unix socket under a temporary folder, no
# iptables, no default bridge), builds the scheduler image and the Batsim stand-in image
# offline (docker/build-offline.sh), runs tests/docker/, then stops the daemon and removes
# the folder.
#
#   bash docker/ci-test.sh          # as root (it starts dockerd); .ci/run runs it too
#
# Where Docker cannot run here (no root, no apt, the daemon does not start) it says why and
# exits 0 on a user's machine; under CI=true that is a failure, as is any failing test.
# MRSCHED_DOCKER_CACHE: where build-offline.sh keeps the base rootfs between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
t0=$SECONDS
say() { echo "docker tests: $*" >&2; }
phase() { say "$1 ($((SECONDS - t0)) s)"; }
unavailable() {
    if [ "${CI:-}" = "true" ]; then
        say "FAILED: $1"
        exit 1
    fi
    say "SKIPPED: $1"
    exit 0
}

# 1. The tools: dockerd + a docker CLI, a compose (v2 plugin or v1), mmdebstrap.
have_compose() { docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; }
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker >/dev/null || missing+=(docker.io)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
if ! command -v docker >/dev/null || ! have_compose; then missing+=(docker-compose); fi
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || unavailable "not root: cannot install ${missing[*]} (apt) nor start dockerd"
    command -v apt-get >/dev/null || unavailable "no apt-get to install ${missing[*]}"
    phase "installing ${missing[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null \
        && apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
            $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null \
        || unavailable "apt-get install ${missing[*]} failed"
fi
[ "$(id -u)" = 0 ] || unavailable "not root: cannot start a private dockerd"

# 2. A private daemon. Its socket is named by DOCKER_HOST for everything below only. Its
# folder is a tmpfs when memory allows (about 2 GB are used): image layers are written faster
# and removing them is an unmount, not minutes of rm -rf on a busy disk.
dir=$(mktemp -d /tmp/mrsched-dockerd.XXXXXX)
pid=
export DOCKER_HOST=unix://$dir/docker.sock
stop_daemon() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        ids=$(docker ps -aq 2>/dev/null || true)
        [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        phase "dockerd stopped"
    fi
    pid=
    # the daemon unmounts its layers on exit; anything still mounted below $dir goes first
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r \
        | while read -r m; do umount -l "$m" || true; done
    rm -rf "$dir"
    phase "removed $dir"
}
trap stop_daemon EXIT
if [ "$(awk '/^MemAvailable:/ {print int($2 / 1048576)}' /proc/meminfo)" -ge 8 ]; then
    mount -t tmpfs -o size=6g,mode=0700 mrsched-dockerd "$dir" || say "no tmpfs: on disk"
fi
start_daemon() {  # $1: storage driver
    dockerd --storage-driver="$1" --iptables=false --ip-masq=false --bridge=none \
        --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
        -H "$DOCKER_HOST" >>"$dir/dockerd.log" 2>&1 &
    pid=$!
    for _ in $(seq 150); do
        docker info >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}
phase "starting dockerd on $DOCKER_HOST"
if ! start_daemon overlay2; then
    reason=$(tail -n 2 "$dir/dockerd.log" | tr '\n' ' ')
    stop_daemon
    dir=$(mktemp -d /tmp/mrsched-dockerd.XXXXXX)  # on disk: vfs copies every layer in full
    export DOCKER_HOST=unix://$dir/docker.sock
    say "overlay2 unavailable ($reason), trying vfs (slower builds)"
    start_daemon vfs || unavailable "dockerd does not start: $(tail -n 2 "$dir/dockerd.log" | tr '\n' ' ')"
fi

# 3. The two images, offline.
phase "building the images (docker/build-offline.sh)"
bash docker/build-offline.sh

# 4. The tests, on this checkout's installation.
if [ -z "${VIRTUAL_ENV:-}" ] && [ -f .venv/bin/activate ]; then . .venv/bin/activate; fi
phase "running tests/docker"
MRSCHED_DOCKER_TESTS=1 STANDIN_IMAGE=mrsched-batsim-standin:latest \
    python -m pytest -q -p no:cacheprovider -rs tests/docker
left=$(docker ps -aq | wc -l)
[ "$left" = 0 ] || { say "FAILED: $left containers left after the tests"; docker ps -a >&2; exit 1; }
phase "passed"

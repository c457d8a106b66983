#!/usr/bin/env bash
# `make test-containers`: the images (deploy/images/build.sh, as `make images`), then the
# compose stack end to end (deploy/images/compose_check.py: its own project and host
# ports, 1 -> 3 -> 1 drivers under load, full content comparison, the gateway, down -v).
#
# A Docker engine this run had to start is stopped again at the end, unless containers
# other than ours run on it by then (someone else's, started meanwhile) or
# SRM_KEEP_ENGINE=1: while an engine answers, everyone's test runs pick the container
# backend (docs/testing.md). Arguments go to compose_check.py (--scale 1,3,1,
# --load-seconds 20, --partitions 4).
set -euo pipefail
cd "$(dirname "$0")/../.."

python=${PYTHON_BIN:-.venv/bin/python}
pidfile=/var/run/docker.pid
started=$SECONDS

engine_was_up=1
docker info >/dev/null 2>&1 || engine_was_up=0

stop_engine() {
    [[ $engine_was_up == 0 && ${SRM_KEEP_ENGINE:-0} != 1 ]] || return 0
    docker info >/dev/null 2>&1 || return 0
    if [[ -n $(docker ps -q) ]]; then
        echo "dockerd keeps running: this run started it, but other containers run on it now"
        return 0
    fi
    local pid
    pid=$(cat "$pidfile" 2>/dev/null) || { echo "dockerd keeps running: no $pidfile"; return 0; }
    echo "stopping dockerd (pid $pid), which this run started"
    kill "$pid"
    for _ in $(seq 60); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 1
    done
    echo "dockerd (pid $pid) did not stop within 60 s" >&2
}
trap stop_engine EXIT

echo "== make images"
deploy/images/build.sh
images=$((SECONDS - started))

echo
echo "== the compose stack end to end"
# In the background, so that a SIGTERM or Ctrl-C reaching this script (a CI timeout,
# make forwarding one) is passed on and waited for: the check takes the stack down
# first, and whoever stopped us gets control back only once it is gone.
status=0
"$python" deploy/images/compose_check.py "$@" &
check=$!
trap 'kill -TERM "$check" 2>/dev/null || true' TERM INT
wait "$check" || status=$?
while kill -0 "$check" 2>/dev/null; do
    wait "$check" || status=$?
done
trap - TERM INT
echo "make test-containers: images $images s, stack $((SECONDS - started - images)) s," \
    "total $((SECONDS - started)) s"
exit "$status"

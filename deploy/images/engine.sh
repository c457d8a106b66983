#!/usr/bin/env bash
# Make sure a Docker engine answers; start one (dockerd in the background, as root) if not,
# and that a compose command is there.
#
# The machines this project is built on have the Docker client only: Debian's docker.io
# brings the daemon (apt-get, when we are root), and nothing else starts it. Says what it
# does, and fails with the command to run when it cannot do it itself.
set -euo pipefail

log=${SRM_DOCKERD_LOG:-/tmp/srm-dockerd.log}

# A compose command for docker-compose.yml: Debian's docker-compose (1.29) unless the
# Compose plugin is there already; Debian has no package of the plugin.
if ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1 \
        && [[ $(id -u) -eq 0 ]]; then
    echo "no compose command: installing Debian's docker-compose..."
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/dev/null
fi

if docker info >/dev/null 2>&1; then
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "no Docker engine answers; start one (for example: sudo dockerd &) and retry" >&2
    exit 1
fi
if ! command -v dockerd >/dev/null; then
    echo "no Docker engine answers and dockerd is missing: installing Debian's docker.io..."
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io >/dev/null
fi
echo "no Docker engine answers: starting dockerd in the background (log: $log)"
nohup dockerd >"$log" 2>&1 &
for _ in $(seq 60); do
    if docker info >/dev/null 2>&1; then
        echo "  dockerd (pid $!) answers"
        exit 0
    fi
    sleep 1
done
echo "dockerd did not answer within 60 s; last lines of $log:" >&2
tail -n 20 "$log" >&2
exit 1

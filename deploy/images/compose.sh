#!/usr/bin/env bash
# The compose command for docker-compose.yml, chosen when it runs: Debian's docker-compose
# (1.29) if installed, else the `docker compose` plugin. Chosen here and not when make
# reads the Makefile, because deploy/images/engine.sh installs docker-compose on a fresh
# machine only after make has started.
set -euo pipefail
if command -v docker-compose >/dev/null; then
    exec docker-compose "$@"
fi
exec docker compose "$@"

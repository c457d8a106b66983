#!/usr/bin/env bash
# The compose stack's read model password (docker-compose.yml: secrets srm-db-password):
# made once, random, in .run/compose/db-password unless SRM_DB_PASSWORD_FILE names one.
# Mode 0644: compose (without swarm) bind-mounts the file as it is, and the postgres and
# gateway users inside the containers must read it; keep the host's .run/ to yourself.
set -euo pipefail

file=${SRM_DB_PASSWORD_FILE:-.run/compose/db-password}
if [[ -s $file ]]; then
    exit 0
fi
mkdir -p "$(dirname "$file")"
umask 022
head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"$file.tmp"
mv "$file.tmp" "$file"
echo "  the read model's database password: $file (new)"

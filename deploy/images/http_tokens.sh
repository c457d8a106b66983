#!/usr/bin/env bash
# The compose stack's HTTP tokens (docker-compose.yml: secrets srm-http-tokens,
# srm-driver-token, srm-gateway-token): made once, random, in .run/compose/http unless
# SRM_HTTP_DIR names another folder. `tokens` holds only each token's SHA-256 (what the
# services check against); <principal>.token the token a client bears:
#   srm-control.token   operators: srm-control, or curl to the gateway (published on loopback)
#   driver.token        every driver (principal driver:compose) reporting to the leader
#   api-gateway.token   the gateway relaying commands to the leader
# Files 0644 in a 0700 folder: compose (without swarm) bind-mounts a file as it is and
# the service users inside the containers must read it; the folder keeps other host
# users out. Never printed: only the paths are.
set -euo pipefail

dir=${SRM_HTTP_DIR:-.run/compose/http}
if [[ -s $dir/tokens ]]; then
    exit 0
fi
mkdir -p "$dir"
chmod 700 "$dir"
umask 022
lines="# principal  sha256 of its token (deploy/images/http_tokens.sh)"
for principal in srm-control driver:compose api-gateway; do
    name=${principal%%:*}
    token=$(head -c 32 /dev/urandom | base64 | tr -d '/+=\n')
    printf '%s\n' "$token" >"$dir/$name.token.tmp"
    mv "$dir/$name.token.tmp" "$dir/$name.token"
    lines+=$'\n'"$principal sha256:$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)"
done
printf '%s\n' "$lines" >"$dir/tokens.tmp"
mv "$dir/tokens.tmp" "$dir/tokens"
echo "  HTTP tokens: $dir/tokens (hashes); operators bear $dir/srm-control.token (new)"

#!/usr/bin/env bash
# `make images`: every SRM image, built from the repository root with no registry.
#
#   srm/debian:bookworm  debootstrap'd root file system (base.sh; first build only)
#   srm/base             + Python 3.11, Java 17 runtime, srm-healthcheck
#   srm/kafka            + the official Apache Kafka jars, KRaft single node
#   srm/coordinator      + srm-coordinator and srm-control with their locked dependencies
#   srm/driver           + srm-driver, PySpark and confluent-kafka (the copy slots are Python)
#   srm/api-gateway      + srm-api-gateway (FastAPI) with its locked dependencies
#   srm/metrics-aggregator + srm-metrics-aggregator (Faust) with its locked dependencies
#   srm/postgres         srm/debian + Debian's postgresql: the gateway's read model store
#
# Python wheels and jars are fetched on the host (the ordinary clients work there; pip
# inside a container does not trust the package index's certificate) into
# .cache/images/context/<image>/, and the images install them offline. Each service gets
# exactly its package's closure from uv.lock (`uv export --package`), checked against the
# lock's hashes when downloaded. Dependencies are installed in a layer before the
# workspace's own wheels, so a code change rebuilds only the last layers.
#
# Run from the repository root after `make jars` (the Makefile does both). Arguments:
# image names to build (default: all). SRM_IMAGE_TAG sets the tag (default: latest).
set -euo pipefail

uv=${UV:-.cache/bootstrap/bin/uv}
context=.cache/images/context
tag=${SRM_IMAGE_TAG:-latest}
services=(coordinator driver api-gateway metrics-aggregator)  # services/<name> with an entry point; see docs/containers.md
# Workspace packages an image holds beside its service: srm-control (services/control, a
# client, no image of its own) ships in the coordinator's image, as operators use it there.
declare -A also=([coordinator]="srm-control")
started=$SECONDS

step() { printf '\n== %s\n' "$*"; }

# docker build with a context of only the listed paths (repository-relative), so the
# driver's 400 MB of wheels are not sent to every build; `docker build -f <Dockerfile> .`
# from the root works as well (.dockerignore), only slower.
build() {
    local image=$1 dockerfile=$2
    shift 2
    local args=()
    while [[ $# -gt 0 && $1 == --* ]]; do args+=("$1" "$2"); shift 2; done
    local begun=$SECONDS
    tar -c "$@" | nice -n 10 docker build -q "${args[@]}" -f "$dockerfile" -t "$image:$tag" - \
        2> >(grep -v -e 'legacy builder is deprecated' -e 'Install the buildx' \
                    -e 'docs.docker.com/go/buildx' -e '^ *$' >&2) >/dev/null
    echo "  $image:$tag built in $((SECONDS - begun)) s"
}

# The wheels of an image's workspace packages' dependencies (downloaded again only when
# the lock's closure changes) and the workspace's own wheels (built every time: a second).
# Arguments: the image's folder name, then its workspace packages.
wheels() {
    local folder=$context/$1 package packages=()
    shift
    for package in "$@"; do packages+=(--package "$package"); done
    mkdir -p "$folder/deps" "$folder/workspace"
    "$uv" export --quiet --frozen "${packages[@]}" --no-dev --no-emit-workspace \
        --no-header -o "$folder/requirements.txt"
    if ! cmp -s "$folder/requirements.txt" "$folder/deps/.requirements.txt"; then
        echo "  downloading the locked dependencies of $* (hashes checked)..."
        rm -rf "$folder/deps" && mkdir -p "$folder/deps"
        nice -n 10 "$uv" tool run --quiet --from pip pip wheel --quiet --disable-pip-version-check \
            --no-deps --require-hashes -r "$folder/requirements.txt" -w "$folder/deps"
        cp "$folder/requirements.txt" "$folder/deps/.requirements.txt"
    fi
    rm -f "$folder/workspace/"*.whl
    local member
    for member in $("$uv" export --quiet --frozen "${packages[@]}" --no-dev --only-emit-workspace \
            --no-header --no-hashes --no-annotate | grep -o '\./[^ ]*'); do
        "$uv" build --quiet --wheel --out-dir "$folder/workspace" "$member"
    done
    echo "  $*: $(ls "$folder/deps" | grep -c '\.whl$') dependency wheels," \
        "workspace: $(cd "$folder/workspace" && echo *.whl)"
}

# A folder of hard links to the jars in $2 (no copy, no stale jar left behind).
link_jars() {
    local target=$1 source=$2
    rm -rf "$target" && mkdir -p "$target"
    ln "$source"/*.jar "$target/"
}

want() { [[ ${#selected[@]} -eq 0 ]] || [[ " ${selected[*]} " == *" $1 "* ]]; }
selected=("$@")

step "Docker engine"
deploy/images/engine.sh
step "base images"
deploy/images/base.sh
build srm/base deploy/images/base/Dockerfile deploy/images/base

if want kafka; then
    step "srm/kafka"
    kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' deploy/maven/kafka/pom.xml)
    jars=.cache/jars/kafka-$kafka_version
    [[ -f $jars/.complete ]] || { echo "$jars is missing: run make jars" >&2; exit 1; }
    link_jars "$context/kafka/libs" "$jars"
    build srm/kafka deploy/images/kafka/Dockerfile --build-arg "KAFKA_VERSION=$kafka_version" \
        deploy/images/kafka "$context/kafka"
fi

for service in "${services[@]}"; do
    want "$service" || continue
    step "srm/$service"
    wheels "$service" "srm-$service" ${also[$service]:-}
    paths=("deploy/images/$service" "$context/$service/deps" "$context/$service/workspace")
    build "srm/$service" "deploy/images/$service/Dockerfile" "${paths[@]}"
done

if want postgres; then
    step "srm/postgres"
    build srm/postgres deploy/images/postgres/Dockerfile deploy/images/postgres
    deploy/images/db_password.sh
fi
deploy/images/http_tokens.sh

step "sizes"
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^srm/' | sort \
    | while read -r name size; do printf '  %-30s %s\n' "$name" "$size"; done
echo "(the images share srm/base's layers: on disk, each adds only what it holds beyond it)"
echo "make images: $((SECONDS - started)) s"

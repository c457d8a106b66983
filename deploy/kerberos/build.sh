#!/usr/bin/env bash
# `make kerberos`: the optional Kerberos (GSSAPI) build of the Python Kafka clients.
#
# The confluent-kafka wheel carries a librdkafka built without GSSAPI. This builds
# librdkafka 2.15.1 with cyrus-sasl and installs confluent-kafka 2.15.1 (the release
# uv.lock pins) from its source distribution against it, plus python-gssapi (aiokafka
# and Faust need it), into .venv. Steps, each skipped when already done:
#
#   1. Debian packages (as root with apt-get; otherwise they must be there already):
#      libsasl2-dev libkrb5-dev libsasl2-modules-gssapi-mit (build and run time),
#      krb5-user (kinit), krb5-kdc krb5-admin-server (the tests' KDC)
#   2. librdkafka 2.15.1's sources: the newest any package registry reachable here
#      carries, inside npm's @confluentinc/kafka-javascript 1.10.1 (deps/librdkafka),
#      fetched with `npm pack`; checked to be 2.15.1 before it is built
#   3. librdkafka built (nice, 2 jobs) into .cache/kerberos/librdkafka-2.15.1
#   4. uv sync with the `kerberos` extra, confluent-kafka rebuilt from its sdist against
#      that librdkafka (its run-time path written into the module: no LD_LIBRARY_PATH)
#   5. a check that the installed client accepts GSSAPI
#
# A plain `make install` afterwards keeps this build (the Makefile adds the extra and
# the flags while .cache/kerberos/ready, written last, exists); `make clean` removes it.
set -euo pipefail

uv=${UV:-.cache/bootstrap/bin/uv}
root=$PWD/.cache/kerberos
version=2.15.1
hex=0x020f01ff   # RD_KAFKA_VERSION of 2.15.1
npm_package=@confluentinc/kafka-javascript@1.10.1
prefix=$root/librdkafka-$version
build_packages=(libsasl2-dev libkrb5-dev libsasl2-modules-gssapi-mit krb5-user)
kdc_packages=(krb5-kdc krb5-admin-server)
started=$SECONDS

step() { printf '== %s\n' "$*"; }
fail() { printf 'make kerberos: %s\n' "$*" >&2; exit 1; }

step "1/5 Debian packages: ${build_packages[*]} ${kdc_packages[*]}"
missing=()
for package in "${build_packages[@]}" "${kdc_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing ${missing[*]} (apt-get)..."
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >"$root.apt.log" 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive \
                 apt-get install -y -q "${missing[@]}" >"$root.apt.log" 2>&1; } \
            || fail "apt-get install ${missing[*]} failed (log: $root.apt.log)"
    else
        fail "missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]}) and run make kerberos again"
    fi
fi

mkdir -p "$root"
rm -f "$root/ready"
if [ ! -e "$prefix/lib/librdkafka.so.1" ]; then
    step "2/5 librdkafka $version sources ($npm_package, deps/librdkafka)"
    command -v npm >/dev/null || fail "npm is needed to fetch librdkafka's sources ($npm_package)"
    rm -rf "$root/src" && mkdir -p "$root/src"
    tarball=$(cd "$root/src" && npm pack --silent "$npm_package" | tail -1)
    tar -xzf "$root/src/$tarball" -C "$root/src"
    source_dir=$root/src/package/deps/librdkafka
    grep -q "#define RD_KAFKA_VERSION  *$hex" "$source_dir/src/rdkafka.h" \
        || fail "$npm_package does not hold librdkafka $version ($source_dir/src/rdkafka.h)"

    step "3/5 building librdkafka $version with cyrus-sasl into $prefix (nice, 2 jobs: ~2-4 min)"
    (
        cd "$source_dir"
        ./configure --prefix="$prefix" --enable-gssapi --enable-ssl --enable-zstd >"$root/configure.log" 2>&1 \
            || fail "librdkafka's configure failed (log: $root/configure.log)"
        grep -q "SASL_CYRUS" Makefile.config || fail "librdkafka's configure found no cyrus-sasl (libsasl2-dev)"
        nice make -j2 -C src >"$root/make.log" 2>&1 || fail "building librdkafka failed (log: $root/make.log)"
        make -C src install >>"$root/make.log" 2>&1 || fail "installing librdkafka failed (log: $root/make.log)"
    )
    rm -rf "$root/src"
else
    step "2-3/5 librdkafka $version already built in $prefix"
fi

step "4/5 confluent-kafka $version from its sdist against it, python-gssapi (uv sync --extra kerberos)"
export CFLAGS="-I$prefix/include" LDFLAGS="-L$prefix/lib -Wl,-rpath,$prefix/lib"
nice "$uv" sync --quiet --frozen --all-packages --extra kerberos \
    --no-binary-package confluent-kafka --reinstall-package confluent-kafka \
    --refresh-package confluent-kafka
touch .venv/.synced

step "5/5 check"
.venv/bin/python - <<'EOF' || fail "the installed client cannot do GSSAPI (see above)"
import confluent_kafka
from importlib.metadata import version
from srm_common.adapters.kerberos import missing_support

problem = missing_support()
if problem:
    raise SystemExit(problem)
print(f"confluent-kafka {version('confluent-kafka')} with librdkafka"
      f" {confluent_kafka.libversion()[0]}: GSSAPI available, python-gssapi installed")
EOF
touch "$root/ready"
echo "make kerberos: done in $((SECONDS - started)) s"

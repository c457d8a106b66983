#!/bin/sh
# srm/postgres: on first start (an empty $PGDATA volume) make the cluster, the role
# $SRM_DB_USER with the password in $SRM_DB_PASSWORD_FILE (a compose secret; never an
# argument or a variable) and the database $SRM_DB_NAME it owns; then run postgres.
# Remote logins need the password (scram-sha-256); the socket is inside the container.
set -eu

db=${SRM_DB_NAME:-srm}
user=${SRM_DB_USER:-srm}
password_file=${SRM_DB_PASSWORD_FILE:-/run/secrets/srm-db-password}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ ! -s "$password_file" ]; then
        echo "srm-postgres: no password in $password_file; give one as a secret" \
            "(docker-compose.yml: secrets srm-db-password)" >&2
        exit 2
    fi
    initdb -D "$PGDATA" -U postgres -E UTF8 --locale=C.UTF-8 \
        --auth-local=peer --auth-host=scram-sha-256 >/dev/null
    {
        echo "listen_addresses = '*'"
        echo "password_encryption = 'scram-sha-256'"
    } >>"$PGDATA/postgresql.conf"
    {
        echo "host all all 0.0.0.0/0 scram-sha-256"
        echo "host all all ::/0 scram-sha-256"
    } >>"$PGDATA/pg_hba.conf"
    # Set up over the socket only, so nothing reaches a half-made database.
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w -s start
    # The password is read by psql itself (\set with backquotes): never in an argv.
    psql -h /tmp -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
        -v user="$user" -v db="$db" -v file="$password_file" <<'SQL'
\set password `head -n 1 :file | tr -d '\r\n'`
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
SQL
    pg_ctl -D "$PGDATA" -m fast -w -s stop
    echo "srm-postgres: database $db for $user created"
fi

exec postgres -D "$PGDATA" -k /tmp

#!/bin/sh
# First start: a cluster owned by POSTGRES_USER (password auth from the network),
# with the database POSTGRES_DB. Later starts: the cluster as it is.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "postgres: set POSTGRES_PASSWORD" >&2; exit 1; }
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
        --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        postgres --single -j -D "$PGDATA" postgres >/dev/null <<SQL
CREATE DATABASE "$POSTGRES_DB" OWNER "$POSTGRES_USER";
SQL
    fi
    echo "postgres: cluster made in $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
[ "$1" = postgres ] && set -- "$@" -c listen_addresses='*'
exec "$@"

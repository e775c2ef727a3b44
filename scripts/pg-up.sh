#!/usr/bin/env bash
# Ensures a PostgreSQL server the tests can use: trust auth on ${PGHOST:-127.0.0.1}:${PGPORT:-5432}, superuser role
# "root", database "test". Reuses a server that is already listening; otherwise starts a throwaway cluster under
# ${PG_TMP_ROOT:-/tmp/cubepi-pg} (never the packaged cluster), as the "postgres" OS user when run as root (initdb
# refuses root). Stop it with scripts/pg-down.sh.
#
# stdout carries only KEY=value lines (PGHOST, PGPORT, PGUSER, PGDATABASE), for `eval`, `export` or $GITHUB_ENV;
# everything else goes to stderr. .ci/run does: eval "$(scripts/pg-up.sh | sed 's/^/export /')"
set -euo pipefail
HOST="${PGHOST:-127.0.0.1}"
PORT="${PGPORT:-5432}"
STATE="${PG_TMP_ROOT:-/tmp/cubepi-pg}" # data, socket and log of a cluster this script starts
export PGCONNECT_TIMEOUT=3

command -v pg_isready >/dev/null || PATH="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1):$PATH"
command -v pg_isready >/dev/null || { echo "pg-up: no PostgreSQL client tools; apt-get install -y postgresql" >&2; exit 1; }

if pg_isready -q -h "$HOST" -p "$PORT"; then
  echo "pg-up: reusing the server on $HOST:$PORT" >&2
else
  [ "$HOST" = 127.0.0.1 ] || [ "$HOST" = localhost ] || { echo "pg-up: nothing listens on $HOST:$PORT" >&2; exit 1; }
  BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
  [ -x "$BIN/initdb" ] || { echo "pg-up: no PostgreSQL server binaries; apt-get install -y postgresql" >&2; exit 1; }
  RUNAS=()
  mkdir -p "$STATE"
  if [ "$(id -u)" = 0 ]; then
    RUNAS=(runuser -u postgres --)
    chown postgres: "$STATE"
  fi
  if [ ! -s "$STATE/data/PG_VERSION" ]; then
    "${RUNAS[@]}" "$BIN/initdb" -D "$STATE/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$STATE/initdb.log" 2>&1 || { cat "$STATE/initdb.log" >&2; exit 1; }
  fi
  # Durability is not what the tests measure: fsync off makes the throwaway cluster fast.
  "${RUNAS[@]}" "$BIN/pg_ctl" -D "$STATE/data" -l "$STATE/server.log" -w -t 30 start \
    -o "-p $PORT -k $STATE -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    >/dev/null || { tail -20 "$STATE/server.log" >&2; exit 1; }
  echo "pg-up: started a throwaway cluster in $STATE on 127.0.0.1:$PORT (stop: scripts/pg-down.sh)" >&2
fi

# A superuser that logs in without a password, then role root and the databases the tests use.
probe() { psql "host=$HOST port=$PORT user=$1 dbname=postgres" -XAtqc 'SELECT 1' >/dev/null 2>&1; }
SU=""
for u in root postgres; do
  if probe "$u"; then SU=$u; break; fi
done
[ -n "$SU" ] || { echo "pg-up: the server on $HOST:$PORT does not trust root or postgres without a password" >&2; exit 2; }
q() { psql "host=$HOST port=$PORT user=$SU dbname=postgres" -XAtqv ON_ERROR_STOP=1 -c "$1"; }
[ "$(q "SELECT 1 FROM pg_roles WHERE rolname = 'root'")" = 1 ] || q "CREATE ROLE root SUPERUSER LOGIN" >/dev/null
for db in test root; do
  [ "$(q "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] || q "CREATE DATABASE $db OWNER root" >/dev/null
done

echo "PGHOST=$HOST"
echo "PGPORT=$PORT"
echo "PGUSER=root"
echo "PGDATABASE=test"

#!/usr/bin/env bash
# Stops the throwaway cluster scripts/pg-up.sh started, and deletes its files (keep them with PG_KEEP_DATA=1).
# Does nothing when pg-up.sh reused a running server.
set -euo pipefail
STATE="${PG_TMP_ROOT:-/tmp/cubepi-pg}"
[ -f "$STATE/data/postmaster.pid" ] || { echo "pg-down: no cluster started by pg-up.sh in $STATE" >&2; exit 0; }
BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(runuser -u postgres --)
"${RUNAS[@]}" "$BIN/pg_ctl" -D "$STATE/data" -m fast -w stop >/dev/null
[ "${PG_KEEP_DATA:-0}" = 1 ] || rm -rf "$STATE"
echo "pg-down: stopped the cluster in $STATE" >&2

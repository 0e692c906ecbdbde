#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the store's tests; prints its URL.
#
#   .ci/postgres.sh [start [DIR]]   install Debian's postgresql when missing, create a cluster
#                                   in DIR (a new temporary directory by default), start it on
#                                   a free port and print postgresql://postgres@127.0.0.1:PORT/postgres
#   .ci/postgres.sh stop DIR        stop the server of DIR and delete DIR
#   .ci/postgres.sh install         only install the package
#
# Nothing global is touched beyond the package: the cluster lives in DIR, belongs to the
# `postgres` user when run as root (initdb refuses root), trusts local TCP connections and
# listens on 127.0.0.1 only, with no Unix socket. HARNESS_PG_NO_INSTALL=1 forbids apt-get.
# On hosts where other users cannot read /etc, the server runs in a private mount
# namespace that shows it a copy of the few files it reads there (passwd, group, ...).
set -euo pipefail

bindir() {
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -n "$found" ] && [ -x "$found/initdb" ]; then echo "$found"; fi
}

install() {
  if [ -n "$(bindir)" ]; then return 0; fi
  if [ "${HARNESS_PG_NO_INSTALL:-}" = 1 ]; then
    echo "postgres.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2
    exit 3
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql >&2
}

# as_owner DIR CMD...: run CMD as the cluster's owner.
as_owner() {
  local dir="$1"; shift
  if [ "$(id -u)" != 0 ]; then "$@"; return; fi
  local uid gid
  uid="$(id -u postgres)"; gid="$(id -g postgres)"
  local drop=(setpriv --reuid="$uid" --regid="$gid" --clear-groups --)
  if "${drop[@]}" test -r /etc/passwd; then "${drop[@]}" "$@"; return; fi
  mkdir -p "$dir/etc"
  local f
  for f in passwd group nsswitch.conf hosts localtime; do
    if [ -e "/etc/$f" ]; then cp -L "/etc/$f" "$dir/etc/$f"; chmod 644 "$dir/etc/$f"; fi
  done
  chmod 755 "$dir/etc"
  unshare --mount --propagation private -- \
    bash -c 'mount --bind "$1" /etc && shift && exec "$@"' _ "$dir/etc" "${drop[@]}" "$@"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  install
  local bin dir port
  bin="$(bindir)"
  dir="${1:-$(mktemp -d -t harness-pg.XXXXXX)}"
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  as_owner "$dir" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  port="$(free_port)"
  as_owner "$dir" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories= -c max_connections=200" \
    start >&2 || { cat "$dir/server.log" >&2; exit 1; }
  echo "postgres.sh: cluster in $dir; stop it with: .ci/postgres.sh stop $dir" >&2
  echo "postgresql://postgres@127.0.0.1:$port/postgres"
}

stop() {
  local dir="${1:?usage: postgres.sh stop DIR}"
  local pid
  if [ -f "$dir/data/postmaster.pid" ]; then
    pid="$(head -n 1 "$dir/data/postmaster.pid")"
    kill -INT "$pid" 2>/dev/null || true   # a fast shutdown
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$dir"
}

case "${1:-start}" in
  start) shift || true; start "$@" ;;
  stop) shift; stop "$@" ;;
  install) install ;;
  *) echo "usage: postgres.sh [start [DIR] | stop DIR | install]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Toxiproxy (Shopify's TCP fault proxy) on 127.0.0.1 for the fault-injection integration tests:
# a proxy between the service and a broker that adds latency, resets connections or black-holes
# traffic on request (its HTTP API). Built from its Go module with `go install` (no prebuilt
# binary), cached in deploy/toxiproxy/.bin/; its log and pid live in a run folder under
# deploy/.run/ (git-ignored).
#
# Usage: deploy/toxiproxy.sh install|start|stop|status|logs [N]|url
#
#   install  build the server with `go install` unless this version is built already.
#   start    install if needed, start the server in the background, wait until its API answers
#            (TOXIPROXY_START_TIMEOUT, default 30 s). On failure: log tail, exit 1.
#   stop     SIGTERM, wait up to 10 s, then SIGKILL. Idempotent.
#   status   exit 0 when running and answering, 1 when running but not ready, 3 when stopped.
#   logs     last N (default 50) lines of its log.
#   url      print the API's base URL (http://127.0.0.1:$TOXIPROXY_PORT).
#
# Environment:
#   TOXIPROXY_PORT           API port on 127.0.0.1 (default 8474, Toxiproxy's)
#   TOXIPROXY_VERSION        the Go module version built (default v2.5.0)
#   TOXIPROXY_RUN_DIR        log and pid (default deploy/.run/toxiproxy-$TOXIPROXY_PORT)
#   TOXIPROXY_START_TIMEOUT  seconds to wait for the API (default 30)
#   GO                       the go binary (default: go on PATH, else /usr/local/go/bin/go)
#   PYTHON                   python for the readiness poll (default python3)
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deploy/daemon.sh
source "$SCRIPT_DIR/daemon.sh"
HOST=127.0.0.1
PORT=${TOXIPROXY_PORT:-8474}
VERSION=${TOXIPROXY_VERSION:-v2.5.0}
MODULE=github.com/Shopify/toxiproxy/v2/cmd/server
BIN_DIR="$SCRIPT_DIR/toxiproxy/.bin/$VERSION"
BINARY="$BIN_DIR/server"  # `go install` names it after its package folder
RUN_DIR=${TOXIPROXY_RUN_DIR:-$SCRIPT_DIR/.run/toxiproxy-$PORT}
[[ $RUN_DIR == /* ]] || RUN_DIR="$PWD/$RUN_DIR"
START_TIMEOUT=${TOXIPROXY_START_TIMEOUT:-30}
PYTHON=${PYTHON:-python3}
LOG_FILE="$RUN_DIR/toxiproxy.log"
PID_FILE="$RUN_DIR/toxiproxy.pid"
URL="http://$HOST:$PORT"

log() { printf 'toxiproxy.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $PORT =~ ^[0-9]+$ ]] || die "TOXIPROXY_PORT must be a number, got '$PORT'"

go_binary() {
  if [[ -n ${GO:-} ]]; then printf '%s\n' "$GO"; return; fi
  command -v go 2>/dev/null || { [[ -x /usr/local/go/bin/go ]] && echo /usr/local/go/bin/go; } \
    || die "go is not installed (it builds Toxiproxy from its module)"
}

cmd_install() {
  local go started
  if [[ -x $BINARY ]]; then
    log "Toxiproxy $VERSION already built in ${BIN_DIR#"$PWD"/}"
    return 0
  fi
  go=$(go_binary)
  started=$SECONDS
  log "building Toxiproxy $VERSION with $("$go" version | cut -d' ' -f3) (go install $MODULE@$VERSION) ..."
  mkdir -p "$BIN_DIR"
  GOBIN="$BIN_DIR" GOFLAGS=-buildvcs=false "$go" install "$MODULE@$VERSION" \
    || { rm -rf "$BIN_DIR"; die "go install $MODULE@$VERSION failed"; }
  log "built in $((SECONDS - started)) s: $BINARY"
}

# Prints the pid of this run folder's server when it is alive, else nothing (returns 1). Its
# command line must name this port, so a recycled pid is never signalled.
server_pid() { daemon_pid "-port $PORT"; }

is_ready() { http_ok "$URL/version"; }

cmd_start() {
  local pid
  if pid=$(server_pid); then
    log "already running (pid $pid) at $URL"
    return 0
  fi
  cmd_install
  mkdir -p "$RUN_DIR"
  # setsid: a Ctrl-C in the caller's terminal does not reach it; `stop` does.
  setsid "$BINARY" -host "$HOST" -port "$PORT" >>"$LOG_FILE" 2>&1 </dev/null &
  pid=$!
  printf '%s\n' "$pid" >"$PID_FILE"
  daemon_await "$pid" "$START_TIMEOUT"
  log "ready at $URL (pid $pid, Toxiproxy $VERSION)"
}

cmd_stop() {
  local pid
  pid=$(server_pid) || { rm -f "$PID_FILE"; return 0; }
  daemon_stop "$pid" 10
}

case ${1:-} in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) daemon_status ;;
  logs) tail -n "${2:-50}" "$LOG_FILE" ;;
  url) echo "$URL" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac

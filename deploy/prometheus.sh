#!/usr/bin/env bash
# A real Prometheus (Debian's `prometheus` package) on 127.0.0.1 that scrapes stream-dedup, for
# development and the integration tests. Its config, data and log live in a run folder under
# deploy/.run/ (git-ignored); the system's /etc/prometheus and port 9090 are never touched.
#
# Usage: deploy/prometheus.sh start|stop|restart|reload|status|logs [N]|config|url
#
#   start    write the config, start Prometheus in the background, wait until /-/ready answers
#            (PROMETHEUS_START_TIMEOUT, default 30 s). On failure: log tail, exit 1.
#   stop     SIGTERM, wait up to 30 s, then SIGKILL. Idempotent.
#   restart  stop then start.
#   reload   rewrite the config (new targets, rules) and tell the running Prometheus to re-read it.
#   status   exit 0 when running and ready, 1 when running but not ready, 3 when stopped.
#   logs     last N (default 50) lines of its log.
#   config   print the config `start` would write.
#   url      print the base URL (http://127.0.0.1:$PROMETHEUS_PORT).
#
# Environment:
#   PROMETHEUS_PORT             listen port on 127.0.0.1 (default 19090)
#   PROMETHEUS_TARGETS          host:port[,host:port...] scraped as job "stream-dedup"
#                               (default 127.0.0.1:9108)
#   PROMETHEUS_SCRAPE_INTERVAL  scrape and rule-evaluation interval (default 5s)
#   PROMETHEUS_RULES            rule files, comma-separated (default deploy/prometheus/alerts.yml;
#                               empty: none)
#   PROMETHEUS_RUN_DIR          config, data, log, pid (default deploy/.run/prometheus-$PORT)
#   PROMETHEUS_START_TIMEOUT    seconds to wait for /-/ready (default 30)
#   PROMETHEUS                  the binary (default: prometheus on PATH)
#   PYTHON                      python for the readiness poll (default python3)
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deploy/daemon.sh
source "$SCRIPT_DIR/daemon.sh"
HOST=127.0.0.1
PORT=${PROMETHEUS_PORT:-19090}
TARGETS=${PROMETHEUS_TARGETS:-127.0.0.1:9108}
INTERVAL=${PROMETHEUS_SCRAPE_INTERVAL:-5s}
RULES=${PROMETHEUS_RULES-$SCRIPT_DIR/prometheus/alerts.yml}
RUN_DIR=${PROMETHEUS_RUN_DIR:-$SCRIPT_DIR/.run/prometheus-$PORT}
[[ $RUN_DIR == /* ]] || RUN_DIR="$PWD/$RUN_DIR"
START_TIMEOUT=${PROMETHEUS_START_TIMEOUT:-30}
PROMETHEUS=${PROMETHEUS:-prometheus}
PYTHON=${PYTHON:-python3}

CONFIG="$RUN_DIR/prometheus.yml"
DATA_DIR="$RUN_DIR/data"
LOG_FILE="$RUN_DIR/prometheus.log"
PID_FILE="$RUN_DIR/prometheus.pid"
URL="http://$HOST:$PORT"

log() { printf 'prometheus.sh: %s\n' "$*" >&2; }

# The config: one job, "stream-dedup" (the alert rules select it by that name).
render_config() {
  local target rule
  local -a rules targets
  printf 'global:\n  scrape_interval: %s\n  evaluation_interval: %s\n' "$INTERVAL" "$INTERVAL"
  printf '  scrape_timeout: %s\n' "$INTERVAL"
  if [[ -n $RULES ]]; then
    printf 'rule_files:\n'
    IFS=, read -ra rules <<<"$RULES"
    for rule in "${rules[@]}"; do
      [[ $rule == /* ]] || rule="$PWD/$rule"
      printf '  - "%s"\n' "$rule"
    done
  fi
  printf 'scrape_configs:\n  - job_name: stream-dedup\n    static_configs:\n'
  printf '      - targets:\n'
  IFS=, read -ra targets <<<"$TARGETS"
  for target in "${targets[@]}"; do
    printf '          - "%s"\n' "$target"
  done
}

# Prints the pid of this run folder's Prometheus when it is alive, else nothing (returns 1).
# Its command line must name this run folder's config, so a recycled pid is never signalled.
server_pid() { daemon_pid "--config.file=$CONFIG"; }

is_ready() { http_ok "$URL/-/ready"; }

write_config() {
  mkdir -p "$RUN_DIR" "$DATA_DIR"
  render_config >"$CONFIG.tmp"
  mv "$CONFIG.tmp" "$CONFIG"
}

cmd_start() {
  local pid
  command -v "$PROMETHEUS" >/dev/null || {
    log "$PROMETHEUS not found: apt-get install --no-install-recommends prometheus"
    exit 1
  }
  if pid=$(server_pid); then
    log "already running (pid $pid) at $URL"
    return 0
  fi
  write_config
  # setsid: a Ctrl-C in the caller's terminal does not reach it; `stop` does.
  setsid "$PROMETHEUS" --config.file="$CONFIG" --storage.tsdb.path="$DATA_DIR" \
    --web.listen-address="$HOST:$PORT" --web.enable-lifecycle \
    --storage.tsdb.retention.time=2d >>"$LOG_FILE" 2>&1 </dev/null &
  pid=$!
  printf '%s\n' "$pid" >"$PID_FILE"
  daemon_await "$pid" "$START_TIMEOUT"
  log "ready at $URL (pid $pid), scraping $TARGETS every $INTERVAL"
}

cmd_stop() {
  local pid
  pid=$(server_pid) || { rm -f "$PID_FILE"; return 0; }
  daemon_stop "$pid" 30
}

cmd_reload() {
  server_pid >/dev/null || { log "not running"; exit 1; }
  write_config
  "$PYTHON" -c 'import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1], method="POST"), timeout=10)' \
    "$URL/-/reload" || { log "reload refused; see $LOG_FILE"; exit 1; }
  log "reloaded: scraping $TARGETS"
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  reload) cmd_reload ;;
  status) daemon_status ;;
  logs) tail -n "${2:-50}" "$LOG_FILE" ;;
  config) render_config ;;
  url) echo "$URL" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac

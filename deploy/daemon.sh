# Sourced by the scripts that keep a local server running in the background (prometheus.sh,
# toxiproxy.sh): finding its pid, polling its HTTP readiness, waiting for it to answer and
# stopping it, saying its status. The caller sets PID_FILE, LOG_FILE, PYTHON and URL, and defines
# log, server_pid, is_ready and cmd_stop.

# daemon_pid MARKER: the pid in PID_FILE when that process is alive and its command line holds
# MARKER, so a recycled pid is never signalled; else nothing (returns 1).
daemon_pid() {
  local pid
  [[ -f $PID_FILE ]] || return 1
  pid=$(<"$PID_FILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *"$1"* ]] || return 1
  printf '%s\n' "$pid"
}

# http_ok URL: whether URL answers 200 within 2 s.
http_ok() {
  "$PYTHON" - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
try:
    sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=2).status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

# daemon_await PID TIMEOUT_S: wait until is_ready; when the process dies or the time is up, the
# last lines of its log, cmd_stop, exit 1.
daemon_await() {
  local pid=$1 timeout=$2 deadline=$((SECONDS + $2))
  until is_ready; do
    if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
      log "not ready within $timeout s (pid $pid); last lines of $LOG_FILE:"
      tail -n 20 "$LOG_FILE" >&2 || true
      cmd_stop
      exit 1
    fi
    sleep 0.2
  done
}

# daemon_stop PID GRACE_S: SIGTERM, SIGKILL after GRACE_S, the pid file removed.
daemon_stop() {
  local pid=$1 grace=$2 deadline=$((SECONDS + $2))
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "still running after $grace s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
  log "stopped (pid $pid)"
}

# daemon_status: say whether the server runs; exit 0 when it is ready, 1 when it runs but is not
# ready, 3 when it is stopped.
daemon_status() {
  local pid
  pid=$(server_pid) || { echo "stopped"; exit 3; }
  if is_ready; then echo "running (pid $pid) at $URL"; exit 0; fi
  echo "running (pid $pid) but not ready"
  exit 1
}

#!/usr/bin/env bash
# Single-node Apache Kafka broker (KRaft, combined broker + controller) on 127.0.0.1 for
# development and the integration tests. The jars come from Maven Central through
# deploy/kafka/pom.xml (no tarball); see that file for the chosen Kafka version and why.
#
# Usage: deploy/kafka.sh start|stop|kill9|restart|status|logs [N|-f]|resolve|clean|bootstrap
#
#   start      resolve the jars if missing, format the data dir if it has no meta.properties,
#              start the broker in the background and wait until an admin describe_cluster()
#              answers (KAFKA_START_TIMEOUT, default 120 s). On failure: broker log tail, exit 1.
#   stop       SIGTERM, wait up to KAFKA_STOP_TIMEOUT (default 60 s), then SIGKILL. Idempotent.
#   kill9      SIGKILL at once (crash tests); the data dir is kept, `start` recovers from it.
#   restart    stop then start.
#   status     exit 0 when running and answering, 1 when running but not answering, 3 when stopped.
#   logs       last N (default 100) lines of the broker log, or follow it with -f.
#   resolve    copy the broker's jars into deploy/kafka/.libs/ (mvn, cached in deploy/kafka/.m2/).
#   clean      stop, then delete this port's run folder (data and logs).
#   bootstrap  print the bootstrap address (127.0.0.1:$KAFKA_PORT).
#
# Environment:
#   KAFKA_PORT             client listener port (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller listener port (default 9093)
#   KAFKA_RUN_DIR          data, logs, config and pid file (default deploy/.run/kafka-$KAFKA_PORT)
#   KAFKA_START_TIMEOUT    seconds to wait for readiness (default 120)
#   KAFKA_STOP_TIMEOUT     seconds to wait after SIGTERM before SIGKILL (default 60)
#   KAFKA_NODE_ID          KRaft node id (default 1)
#   KAFKA_BROKER_SESSION_TIMEOUT_MS
#                          broker.session.timeout.ms (default 9000, Kafka's). After a kill -9 the
#                          restarted node waits this long for its old registration to expire:
#                          start after kill9 takes ~15 s with 9000, ~8 s with 3000.
#   JAVA                   java binary (default: java on PATH)
#   MVN                    maven binary (default: mvn on PATH)
#   PYTHON                 python with kafka-python for the readiness poll (default python3)
#   KAFKA_SECURE           1: also a SASL_SSL listener (SCRAM-SHA-512 over TLS) on
#                          127.0.0.1:$KAFKA_SECURE_PORT, beside PLAINTEXT. At first start a
#                          throwaway CA and broker certificate (openssl, PKCS12 keystore) and a
#                          random password for the SCRAM user are written to $KAFKA_RUN_DIR/secrets
#                          (owner-only; deploy/.run/ is git-ignored): ca.pem (clients' ssl_cafile),
#                          scram.user, scram.password. The user is created at format time
#                          (StorageTool format --add-scram). `clean` deletes them all.
#   KAFKA_SECURE_PORT      the SASL_SSL listener port (default KAFKA_PORT + 2)
#   KAFKA_ADVERTISED_PORT  the port the PLAINTEXT listener tells clients to connect to after
#                          bootstrap (default KAFKA_PORT). The fault-injection tests set it to a
#                          proxy's listen port, so that every connection goes through the proxy;
#                          that proxy must forward to KAFKA_PORT before `start` (the readiness
#                          check connects through it too).
#   KAFKA_SCRAM_USER       the SCRAM user (default alice)
#   KAFKA_SCRAM_PASSWORD   its password (default: random, made once per run folder)
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
KAFKA_DIR="$SCRIPT_DIR/kafka"
POM="$KAFKA_DIR/pom.xml"
LIBS_DIR="$KAFKA_DIR/.libs"
M2_DIR="$KAFKA_DIR/.m2"
LOG4J_CONFIG="$KAFKA_DIR/log4j2.properties"
READY_HELPER="$SCRIPT_DIR/kafka_ready.py"

HOST=127.0.0.1
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
KAFKA_NODE_ID=${KAFKA_NODE_ID:-1}
KAFKA_BROKER_SESSION_TIMEOUT_MS=${KAFKA_BROKER_SESSION_TIMEOUT_MS:-9000}
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-120}
KAFKA_STOP_TIMEOUT=${KAFKA_STOP_TIMEOUT:-60}
RUN_DIR=${KAFKA_RUN_DIR:-$SCRIPT_DIR/.run/kafka-$KAFKA_PORT}
# Absolute: log.dirs and the log file must not depend on the broker's working directory.
[[ $RUN_DIR == /* ]] || RUN_DIR="$PWD/$RUN_DIR"
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}
PYTHON=${PYTHON:-python3}
KAFKA_SECURE=${KAFKA_SECURE:-0}
KAFKA_SECURE_PORT=${KAFKA_SECURE_PORT:-$((KAFKA_PORT + 2))}
KAFKA_SCRAM_USER=${KAFKA_SCRAM_USER:-alice}
KAFKA_ADVERTISED_PORT=${KAFKA_ADVERTISED_PORT:-$KAFKA_PORT}

DATA_DIR="$RUN_DIR/data"
LOG_DIR="$RUN_DIR/logs"
CONFIG="$RUN_DIR/server.properties"
PID_FILE="$RUN_DIR/kafka.pid"
SERVER_LOG="$LOG_DIR/server.log"
CONSOLE_LOG="$LOG_DIR/kafka.out"
MARKER="$RUN_DIR/.stream-dedup-kafka"
SECRETS_DIR="$RUN_DIR/secrets"
SCRAM_MARKER="$DATA_DIR/.stream-dedup-scram"

JVM_OPTS=(
  -Xms256m -Xmx512m
  -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError
  -Djava.awt.headless=true
  -Dkafka.logs.dir="$LOG_DIR"
  -Dlog4j2.configurationFile="$LOG4J_CONFIG"
)

log() { printf 'kafka.sh: %s\n' "$*"; }
die() { printf 'kafka.sh: error: %s\n' "$*" >&2; exit 1; }

usage() {
  sed -n '6,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

check_settings() {
  local v
  for v in KAFKA_PORT KAFKA_CONTROLLER_PORT KAFKA_NODE_ID KAFKA_START_TIMEOUT KAFKA_STOP_TIMEOUT \
      KAFKA_BROKER_SESSION_TIMEOUT_MS KAFKA_SECURE_PORT KAFKA_ADVERTISED_PORT; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
  done
  [[ $KAFKA_PORT != "$KAFKA_CONTROLLER_PORT" ]] || die "KAFKA_PORT and KAFKA_CONTROLLER_PORT are both $KAFKA_PORT"
  [[ $KAFKA_SECURE == 0 || $KAFKA_SECURE == 1 ]] || die "KAFKA_SECURE must be 0 or 1, got '$KAFKA_SECURE'"
  if [[ $KAFKA_SECURE == 1 ]]; then
    [[ $KAFKA_SECURE_PORT != "$KAFKA_PORT" && $KAFKA_SECURE_PORT != "$KAFKA_CONTROLLER_PORT" ]] \
      || die "KAFKA_SECURE_PORT ($KAFKA_SECURE_PORT) must differ from the other ports"
    [[ $KAFKA_SCRAM_USER =~ ^[A-Za-z0-9._-]+$ ]] || die "KAFKA_SCRAM_USER must be [A-Za-z0-9._-]+"
  fi
}

# ---------------------------------------------------------------------------------------------
# KAFKA_SECURE=1: throwaway CA, broker certificate, SCRAM password (owner-only files)

make_secrets() {
  [[ -f "$SECRETS_DIR/broker.p12" && -f "$SECRETS_DIR/scram.password" ]] && return 0
  command -v openssl >/dev/null || die "openssl is needed for KAFKA_SECURE=1"
  log "making a throwaway CA, broker certificate and SCRAM password in $SECRETS_DIR"
  (
    umask 077
    mkdir -p "$SECRETS_DIR"
    cd "$SECRETS_DIR"
    printf '*\n' >.gitignore  # never committed, wherever KAFKA_RUN_DIR points
    err=openssl.err
    openssl rand -hex 24 >store.password
    if [[ -n ${KAFKA_SCRAM_PASSWORD:-} ]]; then
      printf '%s\n' "$KAFKA_SCRAM_PASSWORD" >scram.password
    else
      openssl rand -hex 24 >scram.password
    fi
    printf '%s\n' "$KAFKA_SCRAM_USER" >scram.user
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 30 -keyout ca.key -out ca.pem \
      -subj "/CN=stream-dedup throwaway test CA" 2>"$err"
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout broker.key -out broker.csr \
      -subj "/CN=$HOST" 2>>"$err"
    printf 'subjectAltName=IP:%s,DNS:localhost\nextendedKeyUsage=serverAuth\n' "$HOST" >broker.ext
    openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -sha256 \
      -extfile broker.ext -out broker.pem 2>>"$err"
    openssl pkcs12 -export -in broker.pem -inkey broker.key -certfile ca.pem -name broker \
      -passout "file:store.password" -out broker.p12 2>>"$err"
    rm -f broker.csr broker.ext ca.srl "$err"
    chmod 644 ca.pem  # public: what clients trust
  ) || die "making the test certificates failed (openssl output in $SECRETS_DIR/openssl.err)"
}

secure_config() {
  local store_pw
  store_pw=$(<"$SECRETS_DIR/store.password")
  cat <<EOF

# KAFKA_SECURE=1: SASL_SSL listener, SCRAM-SHA-512 over TLS (certificates in $SECRETS_DIR)
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$SECRETS_DIR/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=$store_pw
listener.name.sasl_ssl.ssl.key.password=$store_pw
listener.name.sasl_ssl.ssl.client.auth=none
EOF
}

# ---------------------------------------------------------------------------------------------
# jars

kafka_version() {
  sed -n 's:.*<kafka.version>\([^<]*\)</kafka.version>.*:\1:p' "$POM" | head -n 1
}

libs_ok() {
  local version
  version=$(kafka_version)
  [[ -n $version && -f "$LIBS_DIR/kafka_2.13-$version.jar" && -f "$LIBS_DIR/.complete-$version" ]]
}

resolve() {
  local version started out
  version=$(kafka_version)
  [[ -n $version ]] || die "cannot read <kafka.version> from $POM"
  if libs_ok; then
    log "jars of Kafka $version already in ${LIBS_DIR#"$PWD"/}"
    return 0
  fi
  command -v "$MVN" >/dev/null || die "maven ('$MVN') is not installed (apt-get install maven)"
  started=$SECONDS
  log "resolving Kafka $version jars with maven (local repository ${M2_DIR#"$PWD"/}) ..."
  rm -rf "$LIBS_DIR"
  # Offline first: a warm cache needs no network at all; fall back to Maven Central.
  # (-q prints only errors; Debian's maven 3.8 also prints stray ESC[0m codes, hence the file.)
  out=$(mktemp)
  if ! "$MVN" -B -q -o -f "$POM" -Dmaven.repo.local="$M2_DIR" package >"$out" 2>&1; then
    rm -rf "$LIBS_DIR"
    if ! "$MVN" -B -q -f "$POM" -Dmaven.repo.local="$M2_DIR" package >"$out" 2>&1; then
      sed 's/\x1b\[[0-9;]*m//g' "$out" >&2
      rm -f "$out"
      die "maven could not resolve the Kafka jars (output above)"
    fi
  fi
  rm -f "$out"
  [[ -f "$LIBS_DIR/kafka_2.13-$version.jar" ]] || die "maven ran but $LIBS_DIR has no kafka_2.13-$version.jar"
  touch "$LIBS_DIR/.complete-$version"
  log "resolved $(find "$LIBS_DIR" -name '*.jar' | wc -l) jars in $((SECONDS - started)) s"
}

# ---------------------------------------------------------------------------------------------
# process

# Prints the pid of this run folder's broker when it is alive, else nothing (and returns 1).
# The command line must name this run folder's config, so a recycled pid is never signalled.
broker_pid() {
  local pid cmdline
  [[ -f $PID_FILE ]] || return 1
  pid=$(<"$PID_FILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r /proc/$pid/cmdline ]]; then
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline")
    [[ $cmdline == *kafka.Kafka*"$CONFIG"* ]] || return 1
    # A killed broker that is not yet reaped is not a running broker.
    ! proc_gone "$pid" || return 1
  fi
  printf '%s\n' "$pid"
}

wait_port_free() { # port seconds: a broker killed a moment ago may still hold it briefly
  local deadline=$((SECONDS + $2))
  while port_busy "$1"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

port_busy() {
  # bash's /dev/tcp: succeeds when something accepts connections on that port.
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

# 0 when the process has exited. SIGKILL makes the thread-group leader a zombie at once while
# the other threads (which still hold the sockets) tear down, so a zombie only counts as gone
# when it is the last thread left.
proc_gone() {
  local pid=$1 state
  kill -0 "$pid" 2>/dev/null || return 0
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 0
  [[ $state == Z ]] || return 1
  local tasks=("/proc/$pid/task/"*)
  ((${#tasks[@]} <= 1))
}

wait_gone() { # pid seconds -> 0 when the process is gone in time
  local pid=$1 deadline=$((SECONDS + $2))
  until proc_gone "$pid"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

print_log_tail() {
  local n=${1:-60}
  if [[ -s $SERVER_LOG ]]; then
    printf -- '----- last %s lines of %s -----\n' "$n" "$SERVER_LOG" >&2
    tail -n "$n" "$SERVER_LOG" >&2
  fi
  if [[ -s $CONSOLE_LOG ]]; then
    printf -- '----- last %s lines of %s -----\n' "$n" "$CONSOLE_LOG" >&2
    tail -n "$n" "$CONSOLE_LOG" >&2
  fi
  printf -- '-----\n' >&2
}

write_config() {
  local heartbeat_ms=$((KAFKA_BROKER_SESSION_TIMEOUT_MS / 3))
  local listeners="PLAINTEXT://$HOST:$KAFKA_PORT" protocols="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
  local advertised="PLAINTEXT://$HOST:$KAFKA_ADVERTISED_PORT"
  ((heartbeat_ms <= 2000)) || heartbeat_ms=2000
  if [[ $KAFKA_SECURE == 1 ]]; then
    listeners+=",SASL_SSL://$HOST:$KAFKA_SECURE_PORT"
    advertised+=",SASL_SSL://$HOST:$KAFKA_SECURE_PORT"
    protocols+=",SASL_SSL:SASL_SSL"
  fi
  (umask 077; : >"$CONFIG")  # holds the keystore password when secure
  cat >"$CONFIG" <<EOF
# Written by deploy/kafka.sh on every start; edits here are overwritten.
process.roles=broker,controller
node.id=$KAFKA_NODE_ID
controller.quorum.bootstrap.servers=$HOST:$KAFKA_CONTROLLER_PORT
listeners=$listeners,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=$advertised,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$protocols
log.dirs=$DATA_DIR

# One node: every internal topic with replication factor 1.
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1

# Tests create their topics explicitly; a typo must not silently create a topic.
auto.create.topics.enable=false
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
# The cleaner's dedupe buffer is on the heap (default 128 MiB); the heap here is 512 MiB.
log.cleaner.dedupe.buffer.size=16777216
broker.session.timeout.ms=$KAFKA_BROKER_SESSION_TIMEOUT_MS
broker.heartbeat.interval.ms=$heartbeat_ms
EOF
  if [[ $KAFKA_SECURE == 1 ]]; then
    secure_config >>"$CONFIG"
  fi
}

format_if_needed() {
  local cluster_id scram=()
  if [[ -f "$DATA_DIR/meta.properties" ]]; then
    if [[ $KAFKA_SECURE == 1 && ! -f $SCRAM_MARKER ]]; then
      die "$DATA_DIR was formatted without SCRAM users; KAFKA_SECURE=1 needs a fresh one (kafka.sh clean)"
    fi
    return 0
  fi
  if [[ $KAFKA_SECURE == 1 ]]; then
    # The SCRAM credential goes into the metadata log at format time (KIP-900).
    scram=(--add-scram "SCRAM-SHA-512=[name=$KAFKA_SCRAM_USER,password=$(<"$SECRETS_DIR/scram.password")]")
  fi
  cluster_id=$("$JAVA" "${JVM_OPTS[@]}" -cp "$LIBS_DIR/*" kafka.tools.StorageTool random-uuid 2>>"$CONSOLE_LOG") \
    || { print_log_tail 40; die "kafka.tools.StorageTool random-uuid failed"; }
  cluster_id=$(printf '%s\n' "$cluster_id" | tail -n 1)
  log "formatting $DATA_DIR (cluster id $cluster_id)"
  if ! "$JAVA" "${JVM_OPTS[@]}" -cp "$LIBS_DIR/*" kafka.tools.StorageTool format \
      -t "$cluster_id" -c "$CONFIG" --standalone "${scram[@]}" >>"$CONSOLE_LOG" 2>&1; then
    print_log_tail 40
    die "formatting $DATA_DIR failed"
  fi
  [[ $KAFKA_SECURE == 0 ]] || touch "$SCRAM_MARKER"
}

start() {
  local pid started rc port
  if pid=$(broker_pid); then
    log "already running (pid $pid) on $HOST:$KAFKA_PORT"
    wait_ready "$pid" any || exit 1
    return 0
  fi
  command -v "$JAVA" >/dev/null || die "java ('$JAVA') is not installed (Kafka 4.x needs Java 17+)"
  local ports=("$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT")
  [[ $KAFKA_SECURE == 0 ]] || ports+=("$KAFKA_SECURE_PORT")
  for port in "${ports[@]}"; do
    wait_port_free "$port" 10 \
      || die "port $HOST:$port is in use by another process (set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
  done
  libs_ok || resolve

  mkdir -p "$DATA_DIR" "$LOG_DIR"
  touch "$MARKER"
  rm -f "$PID_FILE"
  [[ $KAFKA_SECURE == 0 ]] || make_secrets
  write_config
  format_if_needed

  started=$SECONDS
  log "starting Kafka $(kafka_version) on $HOST:$KAFKA_PORT (controller $HOST:$KAFKA_CONTROLLER_PORT), run dir $RUN_DIR"
  printf '\n===== %s start =====\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$CONSOLE_LOG"
  # setsid: the broker outlives this shell and a Ctrl-C in the terminal that started it.
  setsid "$JAVA" "${JVM_OPTS[@]}" -cp "$LIBS_DIR/*" kafka.Kafka "$CONFIG" \
    </dev/null >>"$CONSOLE_LOG" 2>&1 &
  pid=$!
  printf '%s\n' "$pid" >"$PID_FILE"

  rc=0
  wait_ready "$pid" || rc=$?
  if ((rc != 0)); then
    if kill -0 "$pid" 2>/dev/null; then
      log "stopping the broker that did not become ready (pid $pid)"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 10 || true
    fi
    rm -f "$PID_FILE"
    exit 1
  fi
  log "ready in $((SECONDS - started)) s (pid $pid); bootstrap $HOST:$KAFKA_PORT"
  if [[ $KAFKA_SECURE == 1 ]]; then
    log "SASL_SSL (SCRAM-SHA-512) on $HOST:$KAFKA_SECURE_PORT: user $KAFKA_SCRAM_USER, password in $SECRETS_DIR/scram.password, CA $SECRETS_DIR/ca.pem"
  fi
}

wait_ready() { # pid [any]: with "any", any broker id will do (a broker started earlier)
  local pid=$1 rc=0 node=(--node-id "$KAFKA_NODE_ID")
  [[ ${2:-} != any ]] || node=()
  "$PYTHON" "$READY_HELPER" --bootstrap "$HOST:$KAFKA_PORT" --timeout "$KAFKA_START_TIMEOUT" \
    --pid "$pid" "${node[@]}" || rc=$?
  if ((rc != 0)); then
    case $rc in
      2) printf 'kafka.sh: error: the broker exited during startup\n' >&2 ;;
      3) printf 'kafka.sh: error: readiness check needs kafka-python in %s\n' "$PYTHON" >&2 ;;
      *) printf 'kafka.sh: error: the broker did not answer within %s s\n' "$KAFKA_START_TIMEOUT" >&2 ;;
    esac
    print_log_tail 60
    return 1
  fi
}

stop() {
  local pid
  if ! pid=$(broker_pid); then
    rm -f "$PID_FILE"
    log "not running ($HOST:$KAFKA_PORT, run dir $RUN_DIR)"
    return 0
  fi
  log "stopping pid $pid (SIGTERM, up to $KAFKA_STOP_TIMEOUT s)"
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_gone "$pid" "$KAFKA_STOP_TIMEOUT"; then
    log "pid $pid still alive after $KAFKA_STOP_TIMEOUT s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" 10 || die "pid $pid survived SIGKILL"
  fi
  rm -f "$PID_FILE"
  log "stopped"
}

kill9() {
  local pid
  if ! pid=$(broker_pid); then
    rm -f "$PID_FILE"
    log "not running ($HOST:$KAFKA_PORT, run dir $RUN_DIR)"
    return 0
  fi
  log "SIGKILL pid $pid"
  kill -KILL "$pid" 2>/dev/null || true
  wait_gone "$pid" 10 || die "pid $pid survived SIGKILL"
  rm -f "$PID_FILE"
}

status() {
  local pid
  if ! pid=$(broker_pid); then
    log "stopped ($HOST:$KAFKA_PORT, run dir $RUN_DIR)"
    return 3
  fi
  if "$PYTHON" "$READY_HELPER" --bootstrap "$HOST:$KAFKA_PORT" --timeout 5 --pid "$pid" --quiet; then
    log "running (pid $pid) and answering on $HOST:$KAFKA_PORT"
    return 0
  fi
  log "running (pid $pid) but not answering on $HOST:$KAFKA_PORT"
  return 1
}

logs() {
  local arg=${1:-100}
  [[ -f $SERVER_LOG ]] || die "no broker log at $SERVER_LOG"
  if [[ $arg == -f ]]; then
    exec tail -n 50 -F "$SERVER_LOG"
  fi
  [[ $arg =~ ^[0-9]+$ ]] || die "logs takes a line count or -f, got '$arg'"
  tail -n "$arg" "$SERVER_LOG"
}

clean() {
  stop
  if [[ -d $RUN_DIR ]]; then
    [[ -f $MARKER ]] || die "$RUN_DIR was not made by kafka.sh (no $(basename "$MARKER")); not deleting it"
    rm -rf -- "$RUN_DIR"
    log "deleted $RUN_DIR"
  fi
}

main() {
  local cmd=${1:-}
  [[ -n $cmd ]] || { usage >&2; exit 2; }
  shift
  check_settings
  case $cmd in
    start) start ;;
    stop) stop ;;
    kill9 | kill-9) kill9 ;;
    restart) stop; start ;;
    status) status ;;
    logs) logs "$@" ;;
    resolve) resolve ;;
    clean) clean ;;
    bootstrap) printf '%s:%s\n' "$HOST" "$KAFKA_PORT" ;;
    -h | --help | help) usage ;;
    *) printf 'kafka.sh: unknown command %s\n' "$cmd" >&2; usage >&2; exit 2 ;;
  esac
}

main "$@"

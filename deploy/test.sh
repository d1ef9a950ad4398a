#!/usr/bin/env bash
# The one command that sets up a fresh machine and runs every check of stream-dedup:
#   1. Python package + dev extras (pip install -e '.[dev]')
#   2. Debian packages the integration tests use, installed only when missing:
#      kcat, prometheus, chromium and chromium-driver (the inspector's browser tests; selenium
#      comes with the dev extras), + java and maven for the broker, normally already present
#   3. Kafka broker jars (deploy/kafka/pom.xml via maven, cached in deploy/kafka/.m2/)
#   4. a fresh real Kafka broker on 127.0.0.1:$TEST_KAFKA_PORT (default 19092, so a developer's
#      broker on 9092 is left alone), stopped again on exit whatever happens
#   4b. Toxiproxy, the fault proxy (built from its Go module by deploy/toxiproxy.sh), its API on
#      127.0.0.1:$TEST_TOXIPROXY_PORT (default 19290), stopped again on exit whatever happens;
#      the fault tests start a broker of their own behind it
#   5. ruff check stream_dedup tests bench
#   6. mkdocs build --strict (the docs site, with the benchmark results it includes)
#   7. python -m pytest (all tests; "no tests collected" counts as a failure)
# At exit the broker is stopped and what this run put under deploy/.run is removed.
# Exit status: pytest's, or 1 when ruff, the docs or a setup step failed.
#
# The tests see STREAM_DEDUP_KAFKA_BOOTSTRAP=127.0.0.1:$TEST_KAFKA_PORT and the KAFKA_PORT,
# KAFKA_CONTROLLER_PORT, KAFKA_RUN_DIR of that broker, so `bash deploy/kafka.sh kill9|start`
# from a test acts on this very broker, and STREAM_DEDUP_TOXIPROXY_URL (the fault proxy's API).
# Extra arguments are passed to pytest.
set -euo pipefail

REPO_ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"

PYTHON=${PYTHON:-python3}
export PYTHON
export KAFKA_PORT=${TEST_KAFKA_PORT:-19092}
export KAFKA_CONTROLLER_PORT=${TEST_KAFKA_CONTROLLER_PORT:-19093}
export KAFKA_RUN_DIR=${TEST_KAFKA_RUN_DIR:-$REPO_ROOT/deploy/.run/test-kafka-$KAFKA_PORT}
export STREAM_DEDUP_KAFKA_BOOTSTRAP="127.0.0.1:$KAFKA_PORT"
export TOXIPROXY_PORT=${TEST_TOXIPROXY_PORT:-19290}
export TOXIPROXY_RUN_DIR=$REPO_ROOT/deploy/.run/test-toxiproxy-$TOXIPROXY_PORT
export STREAM_DEDUP_TOXIPROXY_URL="http://127.0.0.1:$TOXIPROXY_PORT"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PYTHONUNBUFFERED=1

# What deploy/.run held before this run: anything new in it (the test broker's data, the tests'
# Prometheus folders) is removed at exit, so a run leaves no broker data behind.
RUN_ROOT=$REPO_ROOT/deploy/.run
mapfile -t RUN_BEFORE < <(ls -A "$RUN_ROOT" 2>/dev/null || true)

START=$SECONDS
STEP_START=$SECONDS
BROKER_STARTED=0
TOXIPROXY_STARTED=0

section() {
  if ((SECONDS > START)); then
    printf '(%s s)\n' "$((SECONDS - STEP_START))"
  fi
  STEP_START=$SECONDS
  printf '\n========== %s ==========\n' "$*"
}

fail() { printf '\ntest.sh: FAILED: %s\n' "$*" >&2; exit 1; }

clean_run_dir() {
  local entry
  [[ -d $RUN_ROOT ]] || return 0
  for entry in $(ls -A "$RUN_ROOT"); do
    [[ " ${RUN_BEFORE[*]} " == *" $entry "* ]] || rm -rf -- "${RUN_ROOT:?}/$entry"
  done
  rmdir "$RUN_ROOT" 2>/dev/null || true
}

on_exit() {
  local rc=$?
  if ((BROKER_STARTED)); then
    printf '\n========== stop Kafka broker ==========\n'
    if ((rc != 0)); then
      printf -- '--- last 30 lines of the broker log ---\n'
      bash deploy/kafka.sh logs 30 2>/dev/null || true
      printf -- '---\n'
    fi
    bash deploy/kafka.sh stop || true
  fi
  if ((TOXIPROXY_STARTED)); then
    printf '\n========== stop Toxiproxy ==========\n'
    bash deploy/toxiproxy.sh stop || true
  fi
  clean_run_dir
  printf '\ntest.sh: exit %s after %s s\n' "$rc" "$((SECONDS - START))"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

printf 'test.sh: %s, %s, CI=%s\n' "$("$PYTHON" --version 2>&1)" "$(uname -srm)" "${CI:-}"

# ---------------------------------------------------------------------------------------------
section "Debian packages (kcat, prometheus, chromium, java, maven, go; only the missing ones)"
# Go's own installer puts it in /usr/local/go, off the default PATH.
[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
bash deploy/packages.sh kcat prometheus promtool chromium chromedriver java mvn go ||
  fail "installing the Debian packages"
echo "present: $(command -v kcat) $(command -v prometheus) $(command -v chromium)" \
  "$(command -v chromedriver) $(command -v java) $(command -v mvn) $(command -v go)"
kcat -V 2>&1 | head -n 1 || true
prometheus --version 2>&1 | head -n 1 || true

# ---------------------------------------------------------------------------------------------
section "Python package and dev tools (pip install -e '.[dev]')"
"$PYTHON" -m pip install -q -e '.[dev]' || fail "pip install -e '.[dev]'"
"$PYTHON" -m pip list 2>/dev/null | grep -iE '^(kafka-python|pytest|hypothesis|ruff|selenium) ' || true

# ---------------------------------------------------------------------------------------------
section "Kafka broker jars (maven, cached in deploy/kafka/.m2)"
bash deploy/kafka.sh resolve || fail "resolving the Kafka jars"

# ---------------------------------------------------------------------------------------------
section "Kafka broker on $STREAM_DEDUP_KAFKA_BOOTSTRAP (fresh data dir $KAFKA_RUN_DIR)"
# A fresh broker per run: no topics or offsets left over from an earlier (maybe killed) run.
bash deploy/kafka.sh clean || fail "cleaning the previous test broker"
BROKER_STARTED=1
bash deploy/kafka.sh start || fail "starting the Kafka broker"

# ---------------------------------------------------------------------------------------------
section "Toxiproxy on $STREAM_DEDUP_TOXIPROXY_URL (go install, cached in deploy/toxiproxy/.bin)"
TOXIPROXY_STARTED=1
bash deploy/toxiproxy.sh start || fail "building or starting Toxiproxy"

# ---------------------------------------------------------------------------------------------
section "ruff check stream_dedup tests bench"
ruff_rc=0
"$PYTHON" -m ruff check stream_dedup tests bench || ruff_rc=$?
((ruff_rc == 0)) && echo "ruff: clean"

# ---------------------------------------------------------------------------------------------
section "docs (mkdocs build --strict)"
docs_rc=0
docs_out=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 "$PYTHON" -m mkdocs build --strict --site-dir "$docs_out" || docs_rc=$?
rm -rf "$docs_out"
((docs_rc == 0)) && echo "docs: built"

# ---------------------------------------------------------------------------------------------
section "pytest (all tests)"
pytest_rc=0
"$PYTHON" -m pytest "$@" || pytest_rc=$?

section "summary"
if ((pytest_rc == 5)); then
  echo "pytest: no tests were collected (exit 5): counted as a failure"
  pytest_rc=1
fi
echo "ruff exit $ruff_rc, docs exit $docs_rc, pytest exit $pytest_rc"
if ((pytest_rc != 0)); then
  exit "$pytest_rc"
fi
if ((ruff_rc != 0)); then
  echo "ruff found problems (see above): failing"
  exit 1
fi
if ((docs_rc != 0)); then
  echo "the docs did not build (see above): failing"
  exit 1
fi
echo "all checks passed"

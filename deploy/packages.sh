#!/usr/bin/env bash
# Install the Debian packages behind the given tools, only those missing from PATH, with one line
# saying what is installed and why. Used by deploy/test.sh (every tool) and by `stream-dedup demo`
# (java and mvn, which the local Kafka broker needs), so a fresh machine needs no manual step.
#
# Usage: deploy/packages.sh TOOL...   (tools: java mvn kcat prometheus promtool chromium
#                                      chromedriver go)
# Exit status: 0 when every tool is on PATH afterwards, 1 otherwise (apt-get's output on stderr).
set -euo pipefail

declare -A PACKAGE=([java]=openjdk-17-jre-headless [mvn]=maven [kcat]=kcat [prometheus]=prometheus
                    [promtool]=prometheus [chromium]=chromium [chromedriver]=chromium-driver
                    [go]=golang-go)
declare -A WHY=([java]="the Kafka broker" [mvn]="the Kafka broker's jars" [kcat]="the tests"
                [prometheus]="the tests" [promtool]="the tests"
                [chromium]="the inspector's browser tests"
                [chromedriver]="the inspector's browser tests"
                [go]="building Toxiproxy, the network-fault tests' proxy")

need=()
why=()
for tool in "$@"; do
  [[ -n ${PACKAGE[$tool]:-} ]] || { echo "packages.sh: unknown tool '$tool'" >&2; exit 2; }
  command -v "$tool" >/dev/null && continue
  pkg=${PACKAGE[$tool]}
  [[ " ${need[*]} " == *" $pkg "* ]] || { need+=("$pkg"); why+=("$pkg for ${WHY[$tool]}"); }
done
((${#need[@]} == 0)) && exit 0

as_root=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || {
    echo "packages.sh: need root or sudo to apt-get install ${need[*]}" >&2
    exit 1
  }
  as_root=(sudo)
fi
command -v apt-get >/dev/null || {
  echo "packages.sh: no apt-get here: install ${need[*]} by hand (${why[*]})" >&2
  exit 1
}
(IFS=,; echo "installing with apt-get: ${why[*]}" | sed 's/,/, /g') >&2
# Package installs must not start system services (prometheus would take port 9090): Debian's
# policy-rc.d convention, added for the install only where the image has none.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
  "${as_root[@]}" chmod 755 "$policy"
  added_policy=1
fi
apt_log=$(mktemp)
apt_rc=0
{
  "${as_root[@]}" apt-get update -qq &&
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${need[@]}"
} >"$apt_log" 2>&1 || apt_rc=$?
if ((added_policy)); then "${as_root[@]}" rm -f "$policy"; fi
if ((apt_rc != 0)); then
  tail -n 40 "$apt_log" >&2
  rm -f "$apt_log"
  echo "packages.sh: apt-get install ${need[*]} failed (exit $apt_rc)" >&2
  exit 1
fi
rm -f "$apt_log"
hash -r
for tool in "$@"; do
  command -v "$tool" >/dev/null || { echo "packages.sh: $tool still missing after apt-get" >&2; exit 1; }
done

#!/usr/bin/env bash
# Prints the packages `make test` runs `go test` on: every package of the
# module but test/e2e (`make test-e2e` runs it on a node), the long-running
# ones first.
#
# go test builds and runs the packages in the order it is given them, at
# most -p (default: the number of CPUs) at a time, so the order sets the
# run's length: the fault suite alone runs for minutes, and started after
# everything else it would run alone at the end while the other CPU idles.
# Started first, its binary is built before the others' and it runs while
# they build and run. A package named here that no longer exists fails the
# script, so the list cannot go stale unseen.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Longest first (each one's time is in the `ok` line of a `make test` run).
slow=(
  test/integration/faults
  internal/controller/network/neutron
  test/release
  test/bench
  test/integration/network
  test/integration/dns
  test/integration/ingressmanager
  test/integration/credentials
  test/integration/traffic
  test/integration/manager
  test/integration/framework/prom
)

mod="$(go list -m)"
all="$(go list ./... | grep -v "^${mod}/test/e2e")"
for p in "${slow[@]}"; do
  if ! grep -qx "${mod}/${p}" <<<"${all}"; then
    echo "hack/test-packages.sh: ${p} is not a package of ${mod}: update the list" >&2
    exit 1
  fi
  echo "${mod}/${p}"
done
grep -vxF -f <(printf "${mod}/%s\n" "${slow[@]}") <<<"${all}"

#!/usr/bin/env bash
# Runs every fuzz target of the project for a short time (default 10s each).
# The committed corpora (testdata/fuzz) already run as plain tests in go test.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime ends while a worker is mid-input (golang/go#75804,
# fixed in Go 1.27). A failure that wrote no failing input is that race, not a
# finding: the target is run once more, and only a second failure, or any
# failing input written to testdata/fuzz, fails the script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${1:-10s}"

inputs() { if [[ -d "$1" ]]; then find "$1" -type f | sort; fi; }

for pkg in $(go list ./...); do
  dir="$(go list -f '{{.Dir}}' "${pkg}")"
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "${dir}"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    corpus="${dir}/testdata/fuzz/${target}"
    for attempt in 1 2; do
      echo ">> fuzzing ${pkg} ${target} for ${fuzztime}"
      before="$(inputs "${corpus}")"
      if go test -run='^$' -fuzz="^${target}\$" -fuzztime="${fuzztime}" "${pkg}"; then
        break
      fi
      if [[ "$(inputs "${corpus}")" != "${before}" || "${attempt}" == 2 ]]; then
        echo ">> ${target} failed; a failing input, if any, is in ${corpus}" >&2
        exit 1
      fi
      echo ">> ${target} failed without a failing input (the fuzz coordinator's deadline race); once more" >&2
    done
  done
done

#!/usr/bin/env bash
# Runs every fuzz target of the project for a short time (default 10s each).
# The committed corpora (testdata/fuzz) already run as plain tests in go test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${1:-10s}"
for pkg in $(go list ./...); do
  dir="$(go list -f '{{.Dir}}' "${pkg}")"
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "${dir}"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo ">> fuzzing ${pkg} ${target} for ${fuzztime}"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="${fuzztime}" "${pkg}"
  done
done

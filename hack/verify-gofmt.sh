#!/usr/bin/env bash
# Fails when a Go file is not gofmt-formatted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bad="$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go' | grep -v '^hack/tools/'))"
if [[ -n "${bad}" ]]; then
  echo "these files are not gofmt-formatted (run gofmt -w):" >&2
  echo "${bad}" >&2
  exit 1
fi

#!/usr/bin/env bash
# Fails when a generated page of docs/ (flag, annotation, reason and RBAC
# references, benchmarks, the alerts of operations.md) is stale: hack/docgen regenerates them in memory
# and compares. Never modifies the tree; `make docs` writes them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec "${GO:-go}" run ./hack/docgen -verify

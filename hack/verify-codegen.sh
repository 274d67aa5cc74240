#!/usr/bin/env bash
# Fails when the generated code, CRDs or RBAC are stale: regenerates them into a
# temporary copy of the inputs (hack/update-codegen.sh with OUTPUT_ROOT) and
# diffs the copy against the tree. Never modifies the tree.
#
# Usage: hack/verify-codegen.sh
set -o errexit
set -o nounset
set -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
# Everything update-codegen.sh reads or writes, relative to ROOT.
GENERATED=(pkg/apis pkg/generated config/crd config/rbac)

TMP="$(mktemp -d "${TMPDIR:-/tmp}/verify-codegen.XXXXXX")"
trap 'rm -rf "${TMP}"' EXIT

cp "${ROOT}/go.mod" "${ROOT}/go.sum" "${TMP}/"
for p in "${GENERATED[@]}"; do
  mkdir -p "${TMP}/${p}"
  if [[ -d "${ROOT}/${p}" ]]; then
    cp -a "${ROOT}/${p}/." "${TMP}/${p}/"
  fi
done

if ! OUTPUT_ROOT="${TMP}" "${ROOT}/hack/update-codegen.sh" >"${TMP}.log" 2>&1; then
  cat "${TMP}.log" >&2
  rm -f "${TMP}.log"
  echo "verify-codegen: FAILED: hack/update-codegen.sh failed (output above)" >&2
  exit 1
fi
rm -f "${TMP}.log"

stale=0
for p in "${GENERATED[@]}"; do
  if [[ ! -d "${ROOT}/${p}" ]]; then
    echo "verify-codegen: ${p} is missing" >&2
    stale=1
    continue
  fi
  if ! out="$(diff -Naupr "${ROOT}/${p}" "${TMP}/${p}")"; then
    # Name the two sides tree/ and regenerated/ rather than by their paths.
    printf '%s\n' "${out}" | sed -E "/^(diff|---|\+\+\+) /{s|${TMP}/|regenerated/|g; s|${ROOT}/|tree/|g}" >&2
    stale=1
  fi
done

if [[ "${stale}" -ne 0 ]]; then
  echo >&2
  echo "verify-codegen: FAILED: generated code, CRDs or RBAC are out of date with pkg/apis or the +kubebuilder:rbac markers (diff above)." >&2
  echo "verify-codegen: run hack/update-codegen.sh and commit the result; never edit generated files by hand." >&2
  exit 1
fi
echo "verify-codegen: generated code, CRDs and RBAC are up to date."

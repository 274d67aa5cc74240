#!/usr/bin/env bash
# Writes the release of VERSION (vX.Y.Z[-pre]) into DIST (default dist/),
# everything a user installs from, built from this checkout without Docker,
# a registry or emulation:
#
#   controller-manager-VERSION.oci.tar     OCI image index IMAGE_REPO:VERSION of
#                                          linux/amd64 and linux/arm64 (Go
#                                          cross-compiles; `skopeo copy --all
#                                          oci-archive:...` pushes it)
#   install.yaml                           config/default with that image: the
#                                          CRD and everything else, one file
#   controller-manager-X.Y.Z.tgz           the Helm chart, version X.Y.Z,
#                                          appVersion VERSION
#   controller-manager-VERSION-linux-ARCH.cdx.json
#                                          CycloneDX SBOM of each architecture's
#                                          binary, the image's only software
#                                          (every Go module and its version)
#   BUILDINFO                              what built the release besides its
#                                          commit: the commit, the Go toolchain,
#                                          buildah, tar, and the tools' versions
#   SHA256SUMS                             of all the above
#
# The same commit gives the same bytes, on any machine that has the pinned
# buildah (docs/install.md#reproducing-a-release): the binaries are built by
# go.mod's toolchain, whatever Go is installed, with flags and settings that
# leave nothing of the machine in them (hack/build-binary.sh); the image
# holds the binary alone (its CA roots are a Go module) with fixed
# timestamps (hack/build-image.sh); the SBOMs carry no serial number or
# time, the chart the commit's time. The image's bytes are buildah's, so the
# release refuses any buildah but the pinned one (RELEASE_ANY_BUILDAH=1
# builds with it anyway: an image other than that of a release of the same
# commit built with the pinned one), and BUILDINFO says which it was.
# install.yaml and the chart are checked to install exactly config/default's
# objects with the release's image (hack/chartdiff).
#
# With MANIFESTS_ONLY=1 it writes and checks install.yaml and the chart
# alone (no binaries, image, SBOMs or sums): `make verify` runs it so
# (hack/verify-chart.sh), so that neither drifts from config/default
# between releases.
#
# Usage: VERSION=v0.1.0 [IMAGE_REPO=controller-manager] [DIST=dist] [MANIFESTS_ONLY=1]
#        [RELEASE_ANY_BUILDAH=1] hack/release.sh
# (`make release VERSION=v0.1.0` builds the tools it needs first.)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
die() { echo "release: $*" >&2; exit 1; }

VERSION="${VERSION:?VERSION is the release, e.g. VERSION=v0.1.0}"
[[ "${VERSION}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  die "VERSION=${VERSION} is not a semantic version with a v (v0.1.0, v1.2.0-rc.1)"
IMAGE_REPO="${IMAGE_REPO:-controller-manager}"
DIST="${DIST:-${ROOT}/dist}"
MANIFESTS_ONLY="${MANIFESTS_ONLY:-}"
HELM="${HELM:-${ROOT}/bin/helm}"
KUBECTL="${KUBECTL:-${ROOT}/bin/kubectl}"
PLATFORMS=(linux/amd64 linux/arm64)
image="${IMAGE_REPO}:${VERSION}"
chart_version="${VERSION#v}"
# The buildah a release's image is built with (Debian 12's): the image's
# bytes are its own (its layer archives, and its version in each image's
# configuration, the label io.buildah.version).
BUILDAH_PINNED=1.28.2

# Which buildah this is, checked before anything is written: installed from
# Debian when missing, as hack/build-image.sh would.
if [[ -z "${MANIFESTS_ONLY}" ]]; then
  if ! command -v buildah >/dev/null; then
    # shellcheck source=hack/lib/install.sh
    source hack/lib/install.sh
    install_packages release "${TMPDIR:-/tmp}/release-apt.log" buildah || die "buildah is needed to build the image"
  fi
  buildah_version="$(buildah --version | awk '{print $3}')"
  if [[ "${buildah_version}" != "${BUILDAH_PINNED}" ]]; then
    [[ -n "${RELEASE_ANY_BUILDAH:-}" ]] ||
      die "buildah is ${buildah_version}, a release's image is built with ${BUILDAH_PINNED} (Debian 12's): with another its bytes are not the release's (RELEASE_ANY_BUILDAH=1 builds anyway; nothing was changed)"
    echo "release: WARNING: buildah ${buildah_version}, not ${BUILDAH_PINNED}: the image is not the bytes of a release of this commit built with ${BUILDAH_PINNED} (BUILDINFO says which)" >&2
  fi
fi

# The release replaces DIST: only a directory that is new, empty, or holds
# what a release writes and nothing else (an earlier release), never one
# that holds anything of anyone's.
if [[ -e "${DIST}" || -L "${DIST}" ]]; then
  [[ -d "${DIST}" && ! -L "${DIST}" ]] ||
    die "DIST=${DIST} exists and is not a directory; name a new or empty directory (nothing was changed)"
  others=()
  while IFS= read -r -d '' f; do
    name="${f##*/}"
    if [[ -f "${f}" && ! -L "${f}" ]]; then
      case "${name}" in
        SHA256SUMS | BUILDINFO | install.yaml | controller-manager-*.tgz | controller-manager-*.oci.tar | controller-manager-*-linux-*.cdx.json) continue ;;
      esac
    fi
    others+=("${name}")
  done < <(find "${DIST}" -mindepth 1 -maxdepth 1 -print0)
  if ((${#others[@]} > 0)); then
    die "DIST=${DIST} holds what a release does not write (${others[*]:0:5}$( ((${#others[@]} > 5)) && echo " ...")); the release replaces the whole directory, so name a new or empty one, or that of an earlier release (nothing was changed)"
  fi
fi

mkdir -p "${ROOT}/bin"
work="$(mktemp -d "${ROOT}/bin/.release.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
rm -rf "${DIST}" && mkdir -p "${DIST}"

# binaries_and_image cross-compiles the binary of each platform, writes its
# SBOM, and builds the image index from them.
binaries_and_image() {
  LDFLAGS="${LDFLAGS:?LDFLAGS stamps the version (make release sets it)}"
  if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    echo "release: WARNING: the checkout has uncommitted changes: the release is not that of commit $(git rev-parse --short HEAD)" >&2
  fi
  echo ">> release ${VERSION}: binaries" >&2
  mkdir -p "${work}/image"
  local p os arch out
  for p in "${PLATFORMS[@]}"; do
    os="${p%/*}" arch="${p#*/}"
    out="${work}/image/${os}_${arch}/controller-manager"
    hack/build-binary.sh "${p}" "${out}"
    "${ROOT}/bin/cyclonedx-gomod" bin -json -noserial -notimestamp -version "${VERSION}" \
      -output "${DIST}/controller-manager-${VERSION}-${os}-${arch}.cdx.json" "${out}"
  done

  echo ">> release ${VERSION}: image ${image}" >&2
  local platforms
  platforms="$(IFS=,; echo "${PLATFORMS[*]}")"
  hack/build-image.sh -f Dockerfile -t "${image}" -o "${DIST}/controller-manager-${VERSION}.oci.tar" \
    --platform "${platforms}" "${work}/image"
}

[[ -n "${MANIFESTS_ONLY}" ]] || binaries_and_image

echo ">> release ${VERSION}: install.yaml" >&2
IMG="${image}" hack/deploy.sh render > "${DIST}/install.yaml"

echo ">> release ${VERSION}: chart ${chart_version}" >&2
cp -r charts/controller-manager "${work}/chart"
# The chart's default image is the release's: the repository here, the
# tag from appVersion (image.tag empty).
sed -i "s|^  repository: .*|  repository: ${IMAGE_REPO}|" "${work}/chart/values.yaml"
# Helm writes each file's modification time into the archive: the commit's.
find "${work}/chart" -exec touch -h -d "@$(git log -1 --format=%ct)" {} +
HELM_CACHE_HOME="${work}/helm" HELM_CONFIG_HOME="${work}/helm" HELM_DATA_HOME="${work}/helm" \
  "${HELM}" package "${work}/chart" --version "${chart_version}" --app-version "${VERSION}" \
  --destination "${DIST}" >/dev/null

echo ">> release ${VERSION}: checking install.yaml and the chart against config/default" >&2
go run ./hack/chartdiff -rendered "${DIST}/install.yaml" -image "${image}" >&2
"${HELM}" template controller-manager "${DIST}/controller-manager-${chart_version}.tgz" \
  --namespace controller-manager-system --include-crds > "${work}/chart.yaml"
go run ./hack/chartdiff -rendered "${work}/chart.yaml" -image "${image}" >&2

[[ -n "${MANIFESTS_ONLY}" ]] && exit 0

# tool NAME BIN: the module and version BIN was built from, and the Go that
# built it.
tool() {
  go version -m "$2" | awk -v name="$1" 'NR == 1 {go = $2} $1 == "mod" {mod = $2 " " $3} END {print name ": " mod ", built with " go}'
}
commit="$(git rev-parse HEAD)"
[[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]] || commit+=" with uncommitted changes"
{
  echo "# What built this release besides the files of its commit (docs/install.md#reproducing-a-release)."
  echo "commit: ${commit}"
  echo "go: $(for p in "${PLATFORMS[@]}"; do go version "${work}/image/${p/\//_}/controller-manager" | awk '{print $2}'; done | sort -u | paste -sd ' ')"
  echo "buildah: ${buildah_version} ($(dpkg-query -W -f='Debian ${Version}' buildah 2>/dev/null || echo 'not from Debian'))"
  echo "tar: $(tar --version | head -1)"
  tool helm "${HELM}"
  tool kubectl "${KUBECTL}"
  tool cyclonedx-gomod "${ROOT}/bin/cyclonedx-gomod"
} > "${DIST}/BUILDINFO"
(cd "${DIST}" && sha256sum -- * > SHA256SUMS)
echo ">> release ${VERSION} in ${DIST}:" >&2
(cd "${DIST}" && ls -l) >&2

#!/usr/bin/env bash
# Fails when the Helm chart (charts/controller-manager) is broken or has
# drifted from config/default: `helm lint --strict`, `helm template` with
# default values and with every optional value set, and hack/chartdiff,
# which compares the default rendering with config/default rendered by
# kustomize, object by object, up to the labels Helm adds, and the chart
# with its monitoring values on (ServiceMonitor, PrometheusRule) with
# config/default plus the config/prometheus Component; then the same for
# what a release ships, install.yaml and the packaged chart, written by
# hack/release.sh with MANIFESTS_ONLY=1 (no image). Never modifies the
# tree. Builds bin/helm and bin/kubectl when missing (hack/build-tools.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
HELM_SET="${HELM:-}" HELM="${HELM:-${ROOT}/bin/helm}"
CHART=charts/controller-manager
# The release and namespace config/default's names are: the names of the
# objects derive from the release's.
RELEASE=controller-manager NAMESPACE=controller-manager-system

[[ -n "${HELM_SET:-}" ]] || hack/build-tools.sh helm
hack/build-tools.sh kubectl
TMP="$(mktemp -d "${TMPDIR:-/tmp}/verify-chart.XXXXXX")"
trap 'rm -rf "${TMP}"' EXIT
# Helm's own state (repositories, cache) stays out of $HOME.
export HELM_CACHE_HOME="${TMP}/cache" HELM_CONFIG_HOME="${TMP}/config" HELM_DATA_HOME="${TMP}/data"

"${HELM}" lint --strict "${CHART}" --namespace "${NAMESPACE}"
# Every optional value set: the templates render, and the schema accepts it.
all_values=(
  --set image.tag=v0.1.0 --set replicas=3 --set-json 'controllers=["*","-pod-logger"]'
  --set watchNamespace=team-a --set network.backend=neutron --set network.cloudsSecret=clouds
  --set network.credentialsFromSecrets=true --set-json 'network.credentialsNamespaces=["team-a","team-b"]'
  --set-json 'ingressManager.hostTemplate="{{.Name}}.{{.Namespace}}.apps.example.com"'
  --set ingressManager.class=traefik --set ingressManager.gateway=gateway-system/public
  --set metrics.port=9443 --set metrics.serviceMonitor.enabled=true --set metrics.serviceMonitor.interval=30s
  --set metrics.prometheusRule.enabled=true --set metrics.prometheusRule.labels.role=alert-rules
  --set logging.format=json --set logging.verbosity=2 --set-json 'extraArgs=["--resync-period=5m"]'
  --set-json 'tolerations=[{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"}]'
  --set nodeSelector.role=infra --set podAnnotations.team=a
)
"${HELM}" lint --strict "${CHART}" --namespace "${NAMESPACE}" "${all_values[@]}"
# What a cluster running the Prometheus Operator serves (helm lists each
# group/version, and each group/version/kind).
monitoring=(--api-versions monitoring.coreos.com/v1 --api-versions monitoring.coreos.com/v1/ServiceMonitor
  --api-versions monitoring.coreos.com/v1/PrometheusRule)
"${HELM}" template "${RELEASE}" "${CHART}" --namespace "${NAMESPACE}" "${monitoring[@]}" \
  "${all_values[@]}" > "${TMP}/all-values.yaml"
for kind in ServiceMonitor PrometheusRule; do
  grep -q "^kind: ${kind}$" "${TMP}/all-values.yaml" || {
    echo "verify-chart: FAILED: metrics.serviceMonitor.enabled and metrics.prometheusRule.enabled render no ${kind} on a cluster serving monitoring.coreos.com/v1" >&2
    exit 1
  }
done
# Without the Prometheus Operator's API, neither is rendered (the install
# would fail on an unknown kind).
"${HELM}" template "${RELEASE}" "${CHART}" --namespace "${NAMESPACE}" "${all_values[@]}" > "${TMP}/no-monitoring.yaml"
if grep -qE '^kind: (ServiceMonitor|PrometheusRule)$' "${TMP}/no-monitoring.yaml"; then
  echo "verify-chart: FAILED: a ServiceMonitor or PrometheusRule is rendered for a cluster that does not serve monitoring.coreos.com/v1" >&2
  exit 1
fi

"${HELM}" template "${RELEASE}" "${CHART}" --namespace "${NAMESPACE}" --include-crds > "${TMP}/default.yaml"
if ! "${GO:-go}" run ./hack/chartdiff -rendered "${TMP}/default.yaml"; then
  echo "verify-chart: FAILED: ${CHART} with default values must install what config/default installs (differences above)." >&2
  exit 1
fi
# The monitoring objects, the alert rules included, are config/prometheus's.
"${HELM}" template "${RELEASE}" "${CHART}" --namespace "${NAMESPACE}" --include-crds "${monitoring[@]}" \
  --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true > "${TMP}/monitoring.yaml"
if ! "${GO:-go}" run ./hack/chartdiff -rendered "${TMP}/monitoring.yaml" -components config/prometheus; then
  echo "verify-chart: FAILED: ${CHART} with metrics.serviceMonitor.enabled and metrics.prometheusRule.enabled must install what config/default with config/prometheus installs (differences above; \`make chart-crds\` rewrites the chart's files/alerts.yaml)." >&2
  exit 1
fi

if ! VERSION=v0.0.0-verify DIST="${TMP}/release" MANIFESTS_ONLY=1 HELM="${HELM}" hack/release.sh; then
  echo "verify-chart: FAILED: a release's install.yaml or packaged chart would not install what config/default installs (above)." >&2
  exit 1
fi

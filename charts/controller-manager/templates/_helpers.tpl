{{/*
The base name of every object: "controller-manager" for a release of that
name (the names config/default uses), else <release>-controller-manager,
or fullnameOverride.
*/}}
{{- define "controller-manager.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Labels of every object: config/default's (app.kubernetes.io/part-of) and
the ones Helm charts add, which hack/verify-chart.sh ignores when it
compares the chart with config/default.
*/}}
{{- define "controller-manager.labels" -}}
app.kubernetes.io/part-of: controller-manager
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
{{- end }}

{{/*
The manager's Pods: the Deployment's selector, and what the PDB, the
NetworkPolicy, the metrics Service and the anti-affinity select.
*/}}
{{- define "controller-manager.selectorLabels" -}}
app.kubernetes.io/name: controller-manager
app.kubernetes.io/component: manager
{{- end }}

{{- define "controller-manager.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

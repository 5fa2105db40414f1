{{/*
Names are fixed, not derived from the release name: the docs, the
controller's messages (teardown-controller-jobs, teardown-metrics-reader) and
its ClusterRole (the attach webhook's configuration by name) use them, so one
release per cluster.
*/}}

{{- define "teardown.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: teardown
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* What the Services, the PodMonitor and the PodDisruptionBudget select. */}}
{{- define "teardown.selectorLabels" -}}
app.kubernetes.io/name: teardown-controller
{{- end }}

{{- define "teardown.serviceAccountName" -}}
{{ required "serviceAccount.name is required" .Values.serviceAccount.name }}
{{- end }}

{{/* The controller image, by digest when one is given. */}}
{{- define "teardown.image" -}}
{{- $repo := .Values.image.repository -}}
{{- with .Values.image.registry -}}
{{- $parts := splitList "/" $repo -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq "localhost" $first)) -}}
{{- $parts = rest $parts -}}
{{- end -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) (join "/" $parts) -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{ $repo }}@{{ .Values.image.digest }}
{{- else -}}
{{ $repo }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end }}

{{- define "teardown.webhookServiceName" -}}
teardown-controller-webhook
{{- end }}

{{- define "teardown.webhookSecretName" -}}
teardown-controller-webhook-tls
{{- end }}

{{/* podDisruptionBudget.minAvailable as text; empty when unset or null. */}}
{{- define "teardown.pdbMinAvailable" -}}
{{- $v := .Values.podDisruptionBudget.minAvailable -}}
{{- if not (kindIs "invalid" $v) }}{{ $v }}{{ end -}}
{{- end }}

{{/* podDisruptionBudget.maxUnavailable as text; empty when unset or null. */}}
{{- define "teardown.pdbMaxUnavailable" -}}
{{- $v := .Values.podDisruptionBudget.maxUnavailable -}}
{{- if not (kindIs "invalid" $v) }}{{ $v }}{{ end -}}
{{- end }}

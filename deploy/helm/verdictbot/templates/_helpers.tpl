{{/* The chart's name, or nameOverride. */}}
{{- define "verdictbot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' base name: fullnameOverride, else the release's name when it
already holds the chart's (release "verdictbot" → "verdictbot", as in
deploy/kubernetes), else "<release>-verdictbot".
*/}}
{{- define "verdictbot.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "verdictbot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "verdictbot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "verdictbot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "verdictbot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret holding the tokens (existingSecret). */}}
{{- define "verdictbot.secretName" -}}
{{- default (include "verdictbot.fullname" .) .Values.existingSecret }}
{{- end }}

{{/* postgres: "true" when the state is in PostgreSQL; fails on an unknown store. */}}
{{- define "verdictbot.postgres" -}}
{{- if eq .Values.store "postgres" }}true
{{- else if ne .Values.store "file" }}
{{- fail (printf "store: %q; want file (the embedded file, one replica) or postgres (VERDICTBOT_DATABASE_URL, replicaCount replicas)" .Values.store) }}
{{- end }}
{{- end }}

{{/*
secretKeys: the Secret's keys the container reads, and whether each is
optional (values.yaml, existingSecret). Keep in sync with
deploy/kubernetes/deployment.yaml (deploy/deploy_helm_test.go compares them).
*/}}
{{- define "verdictbot.secretKeys" -}}
- {name: SLACK_BOT_TOKEN, optional: false}
- {name: SLACK_APP_TOKEN, optional: false}
- {name: REPUTATION_API_KEY, optional: false}
- {name: SANDBOX_API_KEY, optional: true}
- {name: SLACK_ADMIN_USER_TOKEN, optional: true}
- {name: VERDICTBOT_EVENTS_SECRET, optional: true}
{{- end }}

{{/* Name of the chart. */}}
{{- define "openaaa-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release name, plus the chart name unless the release name contains it. */}}
{{- define "openaaa-operator.fullname" -}}
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

{{/* Labels of every object. */}}
{{- define "openaaa-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "openaaa-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: openaaa
{{- end }}

{{/* Labels that select the operator pods. */}}
{{- define "openaaa-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "openaaa-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* ServiceAccount name. */}}
{{- define "openaaa-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "openaaa-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Operator image reference: repository@digest or repository:tag. */}}
{{- define "openaaa-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Default policing image. */}}
{{- define "openaaa-operator.policingImage" -}}
{{- printf "%s:%s" .Values.policingImage.repository (default .Chart.AppVersion .Values.policingImage.tag) }}
{{- end }}

{{- define "openaaa-operator.loadgenImage" -}}
{{- printf "%s:%s" .Values.loadgenImage.repository (default .Chart.AppVersion .Values.loadgenImage.tag) }}
{{- end }}

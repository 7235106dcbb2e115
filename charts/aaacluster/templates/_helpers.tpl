{{/* Name of the AAACluster. */}}
{{- define "aaacluster.name" -}}
{{- default .Release.Name .Values.name | trunc 40 | trimSuffix "-" }}
{{- end }}

{{/* Name of the NAS clients Secret. */}}
{{- define "aaacluster.clientsSecretName" -}}
{{- default (printf "%s-nas-clients" (include "aaacluster.name" .)) .Values.nasClients.name }}
{{- end }}

{{/* Name of the ConfigMap of subscribers the AAACluster reads when the values name no source. */}}
{{- define "aaacluster.subscribersConfigMapName" -}}
{{- printf "%s-subscribers" (include "aaacluster.name" .) }}
{{- end }}

{{/* Labels of every object. No chart version: a chart upgrade alone changes nothing. */}}
{{- define "aaacluster.labels" -}}
app.kubernetes.io/name: aaacluster
app.kubernetes.io/instance: {{ include "aaacluster.name" . }}
app.kubernetes.io/part-of: openaaa
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

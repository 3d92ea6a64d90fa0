{{/* Names and labels shared by every object of the release. */}}
{{- define "ptah.name" -}}ptah-operator{{- end -}}

{{- define "ptah.labels" -}}
app.kubernetes.io/name: ptah-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: ptah-operator
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ptah.selectorLabels" -}}
app.kubernetes.io/name: ptah-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{/* repository[:tag]@digest: the digest decides what runs. */}}
{{- define "ptah.imageRef" -}}
{{- .repository -}}{{- if .tag -}}:{{ .tag }}{{- end -}}@{{- .digest -}}
{{- end -}}

{{- define "ptah.serviceAccount" -}}ptah-manager{{- end -}}
{{- define "ptah.webhookService" -}}ptah-operator-webhook{{- end -}}
{{- define "ptah.webhookSecret" -}}ptah-operator-webhook-tls{{- end -}}
{{- define "ptah.metricsPort" -}}{{ regexFind "[0-9]+$" .Values.metrics.bindAddress }}{{- end -}}

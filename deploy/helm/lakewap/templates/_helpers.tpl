{{- define "lakewap.fullname" -}}
{{- printf "%s-lakewap" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "lakewap.labels" -}}
app.kubernetes.io/name: lakewap
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "lakewap.selector" -}}
app.kubernetes.io/name: lakewap
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "lakewap.secretName" -}}
{{- .Values.existingSecret | default (include "lakewap.fullname" .) -}}
{{- end -}}

{{/* The config as the daemon reads it: the values' config with the settings the chart owns. */}}
{{- define "lakewap.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $runner := get $c "runner" | default dict -}}
{{- $_ := set $runner "shutdown_grace" (printf "%ds" (int .Values.shutdownGraceSeconds)) -}}
{{- $_ := set $c "runner" $runner -}}
{{- $http := get $c "http" | default dict -}}
{{- $_ := set $http "listen" (printf ":%d" (int .Values.port)) -}}
{{- $_ := set $c "http" $http -}}
{{- $audit := get $c "audit" | default dict -}}
{{- $_ := set $audit "work_dir" "/var/lib/lakewap/audit" -}}
{{- $_ := set $audit "cache_dir" "/var/lib/lakewap/cache" -}}
{{- $_ := set $audit "cache_max_mb" (int .Values.auditCache.maxMB) -}}
{{- $_ := set $c "audit" $audit -}}
{{- toYaml $c -}}
{{- end -}}

{{/* Names and labels shared by the templates. */}}

{{- define "rolis-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "rolis-operator.fullname" -}}
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

{{- define "rolis-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "rolis-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rolis-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Labels of every object but the component. */}}
{{- define "rolis-operator.commonLabels" -}}
helm.sh/chart: {{ include "rolis-operator.chart" . }}
app.kubernetes.io/name: {{ include "rolis-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rolis
{{- end }}

{{- define "rolis-operator.labels" -}}
{{ include "rolis-operator.commonLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "rolis-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rolis-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* image REPOSITORY TAG DIGEST ROOT: repository@digest when a digest is
     given (pinned: the tag is then ignored), else repository:tag, the tag
     defaulting to appVersion. */}}
{{- define "rolis-operator.image" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository (default .root.Chart.AppVersion .tag) }}
{{- end }}
{{- end }}

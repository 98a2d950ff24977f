{{/*
Names are fixed, not derived from the release name: there is one
gray-controller per cluster, and the guard policy exempts exactly its
ServiceAccount (see gray-controller.serviceAccountUser).
*/}}
{{- define "gray-controller.name" -}}gray-controller{{- end -}}

{{/* Labels every object gets: the kustomize overlays' two, then Helm's. */}}
{{- define "gray-controller.labels" -}}
app.kubernetes.io/name: gray-controller
app.kubernetes.io/part-of: kubectl-gray
{{ include "gray-controller.helmLabels" . }}
{{- end -}}

{{/* Helm's standard labels. */}}
{{- define "gray-controller.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The pod selector; immutable once installed, so kept to one label. */}}
{{- define "gray-controller.selectorLabels" -}}
app.kubernetes.io/name: gray-controller
{{- end -}}

{{- define "gray-controller.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.registry -}}
{{ printf "%s/%s:%s" .Values.image.registry .Values.image.repository $tag }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository $tag }}
{{- end -}}
{{- end -}}

{{/* The user the API server sees for the controller. */}}
{{- define "gray-controller.serviceAccountUser" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "gray-controller.name" . }}
{{- end -}}

{{- define "gray-controller.mode" -}}
{{- if not (has .Values.mode (list "alongside" "instead")) -}}
{{- fail (printf "mode must be alongside or instead, not %q" .Values.mode) -}}
{{- end -}}
{{- if and .Values.namespaces (eq .Values.mode "instead") -}}
{{- fail (printf "namespaces %v needs mode alongside: in instead mode gray-controller is the cluster's only Deployment controller, and every other namespace would have none" .Values.namespaces) -}}
{{- end -}}
{{- .Values.mode -}}
{{- end -}}

{{/* priorityClassName, or in instead mode system-cluster-critical by default. */}}
{{- define "gray-controller.priorityClassName" -}}
{{- if .Values.priorityClassName -}}
{{ .Values.priorityClassName }}
{{- else if eq (include "gray-controller.mode" .) "instead" -}}
system-cluster-critical
{{- end -}}
{{- end -}}

{{/* Whether the alongside admission policies are rendered. */}}
{{- define "gray-controller.policies" -}}
{{- if and (eq (include "gray-controller.mode" .) "alongside") .Values.installPolicies -}}true{{- end -}}
{{- end -}}

{{/*
The --takeover flag, if any: explicit takeover wins; in alongside mode
without the policies nothing else takes Deployments over, so eager.
*/}}
{{- define "gray-controller.takeover" -}}
{{- if and .Values.takeover (not (has .Values.takeover (list "admission" "eager"))) -}}
{{- fail (printf "takeover must be admission or eager, not %q" .Values.takeover) -}}
{{- end -}}
{{- if eq (include "gray-controller.mode" .) "alongside" -}}
{{- if .Values.takeover -}}
{{ .Values.takeover }}
{{- else if not .Values.installPolicies -}}
eager
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "true" when gray-controller rolls its own Deployment out as a gray rollout: instead mode with grayUpgrade. */}}
{{- define "gray-controller.grayUpgrade" -}}
{{- if and .Values.grayUpgrade (eq (include "gray-controller.mode" .) "instead") -}}
true
{{- end -}}
{{- end -}}

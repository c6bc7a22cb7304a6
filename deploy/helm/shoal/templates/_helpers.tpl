{{/* The name of the operator's objects. */}}
{{- define "shoal.name" -}}
shoal-operator
{{- end -}}

{{/* The labels every object carries, and the Deployment selects by. */}}
{{- define "shoal.labels" -}}
app.kubernetes.io/name: {{ include "shoal.name" . }}
{{- end -}}

{{/* Chart name. */}}
{{- define "tidal.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name, at most 63 characters. */}}
{{- define "tidal.fullname" -}}
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

{{- define "tidal.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "tidal.labels" -}}
helm.sh/chart: {{ include "tidal.chart" . }}
app.kubernetes.io/name: {{ include "tidal.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tidal
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of one component: (dict "root" $ "component" "controller"). */}}
{{- define "tidal.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tidal.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "tidal.componentLabels" -}}
{{ include "tidal.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "tidal.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
`base` followed by `suffix`, at most 63 characters (Service names are DNS labels): the base is cut, never
the suffix, so that names that differ only by their suffix stay distinct. (dict "base" … "suffix" "-tls")
*/}}
{{- define "tidal.suffixed" -}}
{{- printf "%s%s" (.base | trunc (int (sub 63 (len .suffix))) | trimSuffix "-") .suffix }}
{{- end }}

{{- define "tidal.controller.fullname" -}}
{{- include "tidal.suffixed" (dict "base" (include "tidal.fullname" .) "suffix" "-controller") }}
{{- end }}

{{- define "tidal.webhook.fullname" -}}
{{- include "tidal.suffixed" (dict "base" (include "tidal.fullname" .) "suffix" "-webhook") }}
{{- end }}

{{/*
A Go duration ("1s", "1m30s", "500ms") in seconds, as a float: (include "tidal.seconds" "1m30s").
*/}}
{{- define "tidal.seconds" -}}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" . -1 }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" . }}
{{- $total = addf $total (mulf ($number | float64) (get $units (trimPrefix $number .))) }}
{{- end }}
{{- $total }}
{{- end }}

{{- define "tidal.controller.serviceAccountName" -}}
{{- if .Values.controller.serviceAccount.create }}
{{- default (include "tidal.controller.fullname" .) .Values.controller.serviceAccount.name }}
{{- else }}
{{- required "controller.serviceAccount.name is required when controller.serviceAccount.create is false" .Values.controller.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tidal.webhook.serviceAccountName" -}}
{{- if .Values.webhook.serviceAccount.create }}
{{- default (include "tidal.webhook.fullname" .) .Values.webhook.serviceAccount.name }}
{{- else }}
{{- required "webhook.serviceAccount.name is required when webhook.serviceAccount.create is false" .Values.webhook.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the webhook's serving certificate. */}}
{{- define "tidal.webhook.secretName" -}}
{{- if eq .Values.webhook.tls.mode "secret" }}
{{- required "webhook.tls.secret.name is required when webhook.tls.mode is secret" .Values.webhook.tls.secret.name }}
{{- else }}
{{- include "tidal.suffixed" (dict "base" (include "tidal.webhook.fullname" .) "suffix" "-tls") }}
{{- end }}
{{- end }}

{{/*
Scheduling constraints of a component: its own affinity if set, else keep off revocable nodes (tidal's
pods are not preemptable) and prefer one replica per node.
*/}}
{{- define "tidal.affinity" -}}
{{- $values := index .root.Values .component }}
{{- if $values.affinity }}
{{- toYaml $values.affinity }}
{{- else }}
{{- if .root.Values.avoidRevocableNodes }}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
          - key: volcano.sh/revocable-zone
            operator: DoesNotExist
{{- end }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "tidal.selectorLabels" . | nindent 12 }}
{{- end }}
{{- end }}

{{/* Pod settings shared by both components: (dict "root" $ "component" "controller"). */}}
{{- define "tidal.podSpecCommon" -}}
{{- $values := index .root.Values .component }}
automountServiceAccountToken: true
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
affinity:
  {{- include "tidal.affinity" . | nindent 2 }}
{{- with $values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Namespaces the webhooks never look at. */}}
{{- define "tidal.webhook.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- toYaml (uniq (concat (list "kube-system" .Release.Namespace) .Values.webhook.excludeNamespaces)) | nindent 6 }}
  {{- with .Values.webhook.namespaceSelectorExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* The ConfigMap holding the webhook configurations the register hook applies. */}}
{{- define "tidal.webhook.configurationsName" -}}
{{- include "tidal.suffixed" (dict "base" (include "tidal.webhook.fullname" .) "suffix" "-configurations") }}
{{- end }}

{{/* The register hook's Job, ServiceAccount and roles. */}}
{{- define "tidal.webhook.registerName" -}}
{{- include "tidal.suffixed" (dict "base" (include "tidal.webhook.fullname" .) "suffix" "-register") }}
{{- end }}

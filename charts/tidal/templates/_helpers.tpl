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

{{/*
Values of the Kubernetes descheduler's chart, refused with tidal's equivalent of each. A values file
copied from that chart would otherwise install a tidal that ignores them (no policy, no schedule, the
wrong node selector) without a word. values.schema.json admits these keys so that this message, rather
than "additional properties not allowed", is what `helm install` prints. Empty values set nothing in
either chart, so they pass.
*/}}
{{- define "tidal.refuseDeschedulerValues" -}}
{{- $cronJob := "a CronJob setting: tidal runs as a controller, each DeschedulingPolicy every spec.interval (defaultPolicy.spec.interval, policies[].spec.interval)" }}
{{- $equivalents := dict
  "deschedulerPolicy" "`tidal convert -f <this values file>` prints the DeschedulingPolicies it amounts to, one per profile; put each one's name and spec in policies (or kubectl apply them)"
  "deschedulerPolicyAPIVersion" "none: `tidal convert` reads descheduler/v1alpha1 and v1alpha2 policies alike"
  "cmdOptions" "the descheduler's flags; tidal's controller takes controller.eviction (qps, burst, concurrency, gracePeriodSeconds), controller.leaderElection and controller.logFormat, and any other `tidal run` flag in controller.extraArgs; dry-run is a policy's spec.mode: DryRun, descheduling-interval its spec.interval (docs/descheduler.md maps each flag)"
  "command" "none: the chart runs `tidal run`; extra flags go in controller.extraArgs"
  "kind" "none: tidal always runs as a Deployment (controller.replicas, leader election); each DeschedulingPolicy runs every spec.interval"
  "schedule" "a CronJob setting: tidal runs as a controller, each DeschedulingPolicy every spec.interval (`tidal convert` turns a schedule of */N * * * * into it)"
  "suspend" "set mode: DryRun in the policies' specs (defaultPolicy.spec.mode, policies[].spec.mode) to evict nothing"
  "startingDeadlineSeconds" $cronJob
  "successfulJobsHistoryLimit" $cronJob
  "failedJobsHistoryLimit" $cronJob
  "ttlSecondsAfterFinished" $cronJob
  "activeDeadlineSeconds" $cronJob
  "cronJobApiVersion" $cronJob
  "timeZone" "a CronJob setting: policies run every spec.interval; the time zone of a revocable zone's windows is zones[].spec.timeZone"
  "deschedulingInterval" "spec.interval of each policy (defaultPolicy.spec.interval, policies[].spec.interval; `tidal convert` carries it over)"
  "replicas" "controller.replicas (2 by default, with leader election)"
  "leaderElection" "controller.leaderElection (enabled, leaseName); lease timings as controller.extraArgs (--leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period)"
  "serviceMonitor" "metrics.serviceMonitor (enabled, interval, scrapeTimeout, labels)"
  "service" "none: the chart always creates the controller's and the webhook's metrics Services; metrics.serviceMonitor scrapes them"
  "resources" "controller.resources (webhook.resources for the webhook)"
  "priorityClassName" "controller.priorityClassName (system-cluster-critical by default; webhook.priorityClassName for the webhook)"
  "nodeSelector" "controller.nodeSelector (webhook.nodeSelector for the webhook)"
  "affinity" "controller.affinity (webhook.affinity for the webhook; empty keeps tidal off revocable nodes)"
  "tolerations" "controller.tolerations (webhook.tolerations for the webhook)"
  "topologySpreadConstraints" "controller.topologySpreadConstraints (webhook.topologySpreadConstraints for the webhook)"
  "podAnnotations" "controller.podAnnotations (webhook.podAnnotations for the webhook)"
  "podLabels" "controller.podLabels (webhook.podLabels for the webhook)"
  "podDisruptionBudget" "controller.podDisruptionBudget (created when controller.replicas > 1)"
  "serviceAccount" "controller.serviceAccount (webhook.serviceAccount for the webhook)"
  "rbac" "none: the chart always creates tidal's least-privilege RBAC (docs/install.md)"
  "podSecurityPolicy" "none: PodSecurityPolicy is gone from Kubernetes; tidal's pods meet the restricted Pod Security Standard"
  "namespaceOverride" "none: tidal installs into the release namespace (`helm install -n`)"
  "deploymentAnnotations" "none: commonLabels labels every object, controller.podAnnotations annotates the controller's pods"
  "cronJobAnnotations" $cronJob
  "cronJobLabels" $cronJob
  "jobAnnotations" $cronJob
  "jobLabels" $cronJob
  "ports" "none: the controller serves metrics on port 8080 and its probes on 8081"
  "livenessProbe" "none: tidal's probes are built in (/healthz and /readyz on port 8081)"
  "dnsConfig" "none: tidal talks only to the API server (and controller.prometheus.url)"
  "initContainers" "none"
  "automountServiceAccountToken" "none: tidal's pods always mount their token, they read the cluster through it"
  "extraServiceAccountVolumeMounts" "none: tidal's pods always mount their token, they read the cluster through it"
  "extraServiceAccountVolumes" "none: tidal's pods always mount their token, they read the cluster through it"
}}
{{- $found := list }}
{{- range $key, $equivalent := $equivalents }}
{{- if not (empty (index $.Values $key)) }}
{{- $found = append $found (printf "  %s: %s" $key $equivalent) }}
{{- end }}
{{- end }}
{{- if $found }}
{{- fail (printf "values of the Kubernetes descheduler's chart, which tidal's chart does not read (docs/descheduler.md):\n%s" (join "\n" $found)) }}
{{- end }}
{{- end }}

{{/* The objects' name: one gpuadmit per cluster (its MutatingWebhookConfiguration and
ClusterRole are cluster-wide, its Lease is named gpuadmit). */}}
{{- define "gpuadmit.name" -}}gpuadmit{{- end -}}

{{- define "gpuadmit.labels" -}}
app.kubernetes.io/name: gpuadmit
app.kubernetes.io/part-of: gpuadmit
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpuadmit.selector" -}}
app.kubernetes.io/name: gpuadmit
app.kubernetes.io/component: webhook
{{- end -}}

{{/* The Service's DNS name, which the serving certificate names. */}}
{{- define "gpuadmit.service" -}}
{{ include "gpuadmit.name" . }}.{{ .Release.Namespace }}.svc
{{- end -}}

{{/* The policy file: files/policy.yaml (manifests/examples/policy.yaml) as written, or, when
values change it, that policy with .Values.policy merged over it and gpu-autoscaler's keys
mapped onto it. */}}
{{- define "gpuadmit.policy" -}}
{{- $text := .Files.Get "files/policy.yaml" -}}
{{- $aw := .Values.admissionWebhook | default dict -}}
{{- $sh := .Values.sharing | default dict -}}
{{- $bp := .Values.binPacking | default dict -}}
{{- if not (or .Values.policy $aw $sh $bp) -}}
{{ $text }}
{{- else -}}
{{- $policy := mustMergeOverwrite (fromYaml $text) (deepCopy (.Values.policy | default dict)) -}}
{{- with $aw.failurePolicy -}}
{{- $_ := set $policy "failureMode" (ternary "closed" "open" (eq . "Fail")) -}}
{{- end -}}
{{- if hasKey $aw "exemptNamespaces" -}}
{{- $_ := set $policy "exemptNamespaces" $aw.exemptNamespaces -}}
{{- end -}}
{{- $sharing := $policy.sharing | default dict -}}
{{- $modes := $sharing.modes | default dict -}}
{{- $mps := $sharing.mps | default dict -}}
{{- $opt := $aw.optimization | default dict -}}
{{- range $key, $mode := dict "enableMIG" "mig" "enableMPS" "mps" "enableTimeSlicing" "timeSlicing" -}}
{{- if hasKey $opt $key -}}{{- $_ := set $modes $mode (get $opt $key) -}}{{- end -}}
{{- end -}}
{{- range $key, $mode := dict "mig" "mig" "mps" "mps" "timeSlicing" "timeSlicing" -}}
{{- $section := get $sh $key | default dict -}}
{{- if hasKey $section "enabled" -}}{{- $_ := set $modes $mode $section.enabled -}}{{- end -}}
{{- end -}}
{{- with $sh.mps -}}
{{- if hasKey . "defaultActiveThreads" -}}
{{- $_ := set $mps "activeThreadPercentage" .defaultActiveThreads -}}
{{- end -}}
{{- if hasKey . "maxClients" -}}{{- $_ := set $mps "maxClients" .maxClients -}}{{- end -}}
{{- with .resources -}}
{{- if hasKey . "memoryLimitMB" -}}{{- $_ := set $mps "memoryLimit" .memoryLimitMB -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $sharing "modes" $modes -}}
{{- if $mps -}}{{- $_ := set $sharing "mps" $mps -}}{{- end -}}
{{- $_ := set $policy "sharing" $sharing -}}
{{- if hasKey $opt "autoDetectWorkloadType" -}}
{{- $detection := $policy.workloadDetection | default dict -}}
{{- $_ := set $detection "enabled" $opt.autoDetectWorkloadType -}}
{{- $_ := set $policy "workloadDetection" $detection -}}
{{- end -}}
{{- with $bp.strategy -}}
{{- $placement := $policy.placement | default dict -}}
{{- $_ := set $placement "strategy" . -}}
{{- $_ := set $policy "placement" $placement -}}
{{- end -}}
{{ toYaml $policy }}
{{- end -}}
{{- end -}}

{{/* The release's name for its objects: <release>-gpupool, or fullnameOverride. */}}
{{- define "gpupool.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "gpupool.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpupool
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "ingest"). */}}
{{- define "gpupool.selector" -}}
app.kubernetes.io/name: {{ default .root.Chart.Name .root.Values.nameOverride }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gpupool.componentLabels" -}}
{{ include "gpupool.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gpupool.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "gpupool.collectorImage" -}}
{{- printf "%s:%s" .Values.collector.image.repository (default .Chart.AppVersion .Values.collector.image.tag) -}}
{{- end -}}

{{/* The ClickHouse password's Secret name and key. */}}
{{- define "gpupool.clickhouseSecret" -}}
{{- if .Values.clickhouse.password -}}{{ include "gpupool.fullname" . }}-clickhouse{{- else -}}{{ required "clickhouse.password or clickhouse.existingSecret is required" .Values.clickhouse.existingSecret }}{{- end -}}
{{- end -}}
{{- define "gpupool.clickhouseSecretKey" -}}
{{- if .Values.clickhouse.password -}}password{{- else -}}{{ .Values.clickhouse.existingSecretKey }}{{- end -}}
{{- end -}}

{{- define "gpupool.authSecret" -}}
{{- default (printf "%s-auth" (include "gpupool.fullname" .)) .Values.auth.existingSecret -}}
{{- end -}}

{{/* Whether the scheduler's executors include kubernetes. */}}
{{- define "gpupool.kubernetesExecutor" -}}
{{- $ex := splitList "," (((.Values.config).scheduler).executor | default "none" | toString) -}}
{{- range $ex }}{{ if eq (trim .) "kubernetes" }}true{{ end }}{{ end -}}
{{- end -}}

{{/*
The configuration file: .Values.config with the chart's connection settings over it.
*/}}
{{- define "gpupool.config" -}}
{{- $c := deepCopy (.Values.config | default dict) -}}
{{- $bus := dict "url" .Values.nats.url "streams" (dict "replicas" (int .Values.nats.streamReplicas)) -}}
{{- if .Values.nats.credentials.existingSecret -}}
{{- if eq .Values.nats.credentials.type "nkey" -}}
{{- $_ := set $bus "nkey_file" "/etc/gpupool/nats/credential" -}}
{{- else -}}
{{- $_ := set $bus "creds_file" "/etc/gpupool/nats/credential" -}}
{{- end -}}
{{- end -}}
{{- if .Values.nats.tls.caSecret -}}
{{- $_ := set $bus "tls_ca" "/etc/gpupool/nats-ca/ca.crt" -}}
{{- end -}}
{{- $ch := dict "database" .Values.clickhouse.database "username" .Values.clickhouse.username "password_file" "/etc/gpupool/clickhouse/password" "tls" .Values.clickhouse.tls -}}
{{- if .Values.clickhouse.operator.enabled -}}
{{- $_ := set $ch "addr" (list (printf "clickhouse-%s:9000" .Values.clickhouse.operator.name)) -}}
{{- $_ := set $ch "cluster" .Values.clickhouse.operator.cluster -}}
{{- else -}}
{{- $_ := set $ch "addr" .Values.clickhouse.addr -}}
{{- if .Values.clickhouse.cluster -}}{{- $_ := set $ch "cluster" .Values.clickhouse.cluster -}}{{- end -}}
{{- end -}}
{{- $auth := dict "tokens_file" "/etc/gpupool/auth/tokens" "generate_admin_token" false -}}
{{- if .Values.scheduler.tls.insecure -}}
{{- $_ := set $auth "insecure" true -}}
{{- else -}}
{{- $_ := set $auth "tls" (dict "cert_file" "/etc/gpupool/tls/tls.crt" "key_file" "/etc/gpupool/tls/tls.key") -}}
{{- end -}}
{{- $managed := dict "data_dir" "/var/lib/gpupool" "bus" $bus "store" (dict "backend" "clickhouse" "clickhouse" $ch) "auth" $auth -}}
{{- if .Values.metrics.insecure -}}
{{- $_ := set $managed "metrics_insecure" true -}}
{{- end -}}
{{- if and .Values.collector.enabled .Values.collector.kubelet.enabled -}}
{{- $att := dict "kubelet_url" .Values.collector.kubelet.url "kubelet_token_file" "/var/run/secrets/kubernetes.io/serviceaccount/token" "kubelet_insecure_skip_verify" .Values.collector.kubelet.insecureSkipVerify -}}
{{- if not .Values.collector.kubelet.insecureSkipVerify -}}
{{- $_ := set $att "kubelet_ca_file" "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" -}}
{{- end -}}
{{- $_ := set $managed "collector" (dict "attribution" $att) -}}
{{- end -}}
{{- if .Values.alerts.slackTokenSecret -}}
{{- $_ := set $managed "alerts" (dict "bot_token_file" "/etc/gpupool/slack/token") -}}
{{- end -}}
{{- toYaml (mergeOverwrite $c $managed) -}}
{{- end -}}

{{/*
Volumes every gpupool pod has: the configuration, the ClickHouse password, its NATS
credential (key = component), the NATS CA, and writable /tmp.
(dict "root" $ "component" "ingest")
*/}}
{{- define "gpupool.volumes" -}}
- name: config
  configMap:
    name: {{ include "gpupool.fullname" .root }}-config
- name: clickhouse-password
  secret:
    secretName: {{ include "gpupool.clickhouseSecret" .root }}
    items:
      - {key: {{ include "gpupool.clickhouseSecretKey" .root }}, path: password}
{{- if and .root.Values.nats.credentials.existingSecret (ne .component "migrate") }}
- name: nats-credential
  secret:
    secretName: {{ .root.Values.nats.credentials.existingSecret }}
    items:
      - {key: {{ .component }}, path: credential}
{{- end }}
{{- if .root.Values.nats.tls.caSecret }}
- name: nats-ca
  secret:
    secretName: {{ .root.Values.nats.tls.caSecret }}
    items:
      - {key: ca.crt, path: ca.crt}
{{- end }}
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "gpupool.volumeMounts" -}}
- {name: config, mountPath: /etc/gpupool/config, readOnly: true}
- {name: clickhouse-password, mountPath: /etc/gpupool/clickhouse, readOnly: true}
{{- if and .root.Values.nats.credentials.existingSecret (ne .component "migrate") }}
- {name: nats-credential, mountPath: /etc/gpupool/nats, readOnly: true}
{{- end }}
{{- if .root.Values.nats.tls.caSecret }}
- {name: nats-ca, mountPath: /etc/gpupool/nats-ca, readOnly: true}
{{- end }}
- {name: tmp, mountPath: /tmp}
{{- end -}}

{{/* Liveness and readiness on the metrics port's /healthz and /readyz. */}}
{{- define "gpupool.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: metrics}
  periodSeconds: 20
  failureThreshold: 3
readinessProbe:
  httpGet: {path: /readyz, port: metrics}
  periodSeconds: 10
  failureThreshold: 3
{{- end -}}

{{/* The pod spec's common part. */}}
{{- define "gpupool.podCommon" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with (get .values "nodeSelector") }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (get .values "tolerations") }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (get .values "affinity") }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Pod template metadata: (dict "root" $ "component" "ingest"). */}}
{{- define "gpupool.podMeta" -}}
labels:
  {{- include "gpupool.selector" . | nindent 2 }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  checksum/config: {{ include "gpupool.config" .root | sha256sum }}
  {{- with .root.Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* A component's metrics Service: (dict "root" $ "component" "ingest" "port" 9465). */}}
{{- define "gpupool.metricsService" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "gpupool.fullname" .root }}-{{ .component }}
  labels:
    {{- include "gpupool.componentLabels" . | nindent 4 }}
    gpupool.io/metrics: "true"
spec:
  {{- if (get . "headless") }}
  clusterIP: None
  {{- end }}
  selector:
    {{- include "gpupool.selector" . | nindent 4 }}
  ports:
    - {name: metrics, port: {{ .port }}, targetPort: metrics, protocol: TCP}
    {{- with (get . "extraPorts") }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/*
A component's Deployment: (dict "root" $ "component" "ingest" "values" .Values.ingest
"args" (list …) "replicas" 2 "recreate" false "sa" "" "ports" (list …)
"mounts" (list …) "volumes" (list …)).
*/}}
{{- define "gpupool.deployment" -}}
{{- $v := .values -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "gpupool.fullname" .root }}-{{ .component }}
  labels:
    {{- include "gpupool.componentLabels" . | nindent 4 }}
spec:
  replicas: {{ (get . "replicas") | default 1 }}
  {{- if (get . "recreate") }}
  # One at a time: two would run the same passes (or hold the same volume).
  strategy: {type: Recreate}
  {{- end }}
  selector:
    matchLabels:
      {{- include "gpupool.selector" . | nindent 6 }}
  template:
    metadata:
      {{- include "gpupool.podMeta" . | nindent 6 }}
    spec:
      {{- if (get . "sa") }}
      serviceAccountName: {{ (get . "sa") }}
      {{- else }}
      automountServiceAccountToken: false
      {{- end }}
      {{- include "gpupool.podCommon" . | trim | nindent 6 }}
      containers:
        - name: {{ .component }}
          image: {{ include "gpupool.image" .root }}
          imagePullPolicy: {{ .root.Values.image.pullPolicy }}
          args:
            - -c
            - /etc/gpupool/config/gpupool.yaml
            {{- toYaml .args | nindent 12 }}
          ports:
            - {name: {{ (get . "portName") | default "metrics" }}, containerPort: {{ $v.metricsPort }}, protocol: TCP}
            {{- with (get . "ports") }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- if (get . "probes") }}
          {{- (get . "probes") | nindent 10 }}
          {{- else }}
          {{- include "gpupool.probes" . | nindent 10 }}
          {{- end }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml .root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            {{- include "gpupool.volumeMounts" . | nindent 12 }}
            {{- if not (get . "ownData") }}
            # data_dir: nothing is kept there by this component, but the root filesystem is read-only.
            - {name: data, mountPath: /var/lib/gpupool}
            {{- end }}
            {{- with (get . "mounts") }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        {{- include "gpupool.volumes" . | nindent 8 }}
        {{- if not (get . "ownData") }}
        - name: data
          emptyDir: {}
        {{- end }}
        {{- with (get . "volumes") }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end -}}

{{/* A PersistentVolumeClaim: (dict "root" $ "component" "scheduler" "p" .Values.scheduler.persistence). */}}
{{- define "gpupool.pvc" -}}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ include "gpupool.fullname" .root }}-{{ .component }}
  labels:
    {{- include "gpupool.componentLabels" . | nindent 4 }}
spec:
  accessModes: [ReadWriteOnce]
  {{- with .p.storageClassName }}
  storageClassName: {{ . }}
  {{- end }}
  resources:
    requests:
      storage: {{ .p.size }}
{{- end -}}

{{/* The data volume: the PVC when persistence is on, else an emptyDir. */}}
{{- define "gpupool.dataVolume" -}}
- name: data
  {{- if .p.enabled }}
  persistentVolumeClaim:
    claimName: {{ include "gpupool.fullname" .root }}-{{ .component }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end -}}

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Start a throw-away Kubernetes control plane on 127.0.0.1 from the cached
# binaries (build them first with test/cluster/build.sh):
#
#   etcd                      127.0.0.1:12379 (peer 12380)
#   kube-apiserver            https://127.0.0.1:16443, Node,RBAC authorization,
#                             NodeRestriction, x509 client certs, kubelet client cert
#   kube-controller-manager   no serving port, own identity + per-controller
#                             ServiceAccount credentials (as kubeadm does)
#   kube-scheduler            no serving port, own identity
#   kwok                      only with WITH_KWOK=1; manages only Nodes annotated
#                             kwok.x-k8s.io/node=fake; pod stages from
#                             kwok-stages.yaml (Job pods stay Running)
#   kueue                     only with WITH_KUEUE=1; its CRDs, webhooks at
#                             https://127.0.0.1:19443 (for the objects of
#                             namespaces labelled trainsonnet.test/kueue=true
#                             and of cluster-scoped kinds), its own identity
#                             bound to its ClusterRole; the Job, pod and
#                             Deployment integrations (and JobSet's, with
#                             WITH_JOBSET=1)
#   jobset                    only with WITH_JOBSET=1; its CRD, webhooks at
#                             https://127.0.0.1:19444 (for the objects of
#                             namespaces labelled trainsonnet.test/jobset=true),
#                             its own identity bound to its ClusterRole
#
# and wait until the API server is ready and the `default` ServiceAccount
# exists in namespace `default`.
#
# Writes into $TRAINSONNET_STATE (default /tmp/trainsonnet-cluster):
#   kubeconfig   admin kubeconfig (client cert in group system:masters)
#   env          sourceable: exports KUBECONFIG, KUBECTL and TRAINSONNET_* paths
#   pki/         ca.crt ca.key (CA for all certs; sign kubelet certs with it),
#                apiserver.*, admin.*, apiserver-kubelet-client.*,
#                kube-controller-manager.*, kube-scheduler.*, sa.key, sa.pub
#   pids/        one record per started process (used by down.sh)
#   logs/        one log per component
#   etcd/        etcd data
#
# Environment:
#   WITH_KWOK=1                  also start kwok
#   WITH_KUEUE=1                 also start Kueue (as root: it reads a metrics
#                                certificate from /etc/kueue/metrics/certs)
#   TRAINSONNET_KUEUE_WEBHOOK_PORT, TRAINSONNET_KUEUE_HEALTH_PORT
#                                default 19443 and 18081
#   WITH_JOBSET=1                also start the JobSet controller
#   TRAINSONNET_JOBSET_WEBHOOK_PORT, TRAINSONNET_JOBSET_HEALTH_PORT
#                                default 19444 and 18082
#   TRAINSONNET_STATE            state dir (default /tmp/trainsonnet-cluster)
#   TRAINSONNET_CACHE            binary cache (default /var/cache/trainsonnet)
#   TRAINSONNET_ETCD_PORT        default 12379
#   TRAINSONNET_ETCD_PEER_PORT   default 12380
#   TRAINSONNET_API_PORT         default 16443
#   TRAINSONNET_UP_TIMEOUT       seconds to wait for each component, and to
#                                try each step against the API server again
#                                (default 180: a loaded machine's API server
#                                answers late)
#   TRAINSONNET_KEEP_DATA=1      keep the etcd data of the previous run (default:
#                                every start is a fresh, empty cluster; the PKI
#                                is always kept)
#   TRAINSONNET_{ETCD,APISERVER,KCM,SCHEDULER,KWOK,KUEUE,JOBSET}_EXTRA_ARGS
#                                extra flags, split on white space
#
# Refuses to start (one-line error, exit 1) if a cluster from the same state
# dir is running or a port is taken. If start-up fails, whatever was started
# is stopped again. Stop with test/cluster/down.sh.
set -euo pipefail
TS_NAME=up
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

WITH_KWOK="${WITH_KWOK:-0}"
WITH_KUEUE="${WITH_KUEUE:-0}"
KUEUE_WEBHOOK_PORT="${TRAINSONNET_KUEUE_WEBHOOK_PORT:-19443}"
KUEUE_HEALTH_PORT="${TRAINSONNET_KUEUE_HEALTH_PORT:-18081}"
WITH_JOBSET="${WITH_JOBSET:-0}"
JOBSET_WEBHOOK_PORT="${TRAINSONNET_JOBSET_WEBHOOK_PORT:-19444}"
JOBSET_HEALTH_PORT="${TRAINSONNET_JOBSET_HEALTH_PORT:-18082}"
UP_TIMEOUT="${TRAINSONNET_UP_TIMEOUT:-180}"
KUBECTL="$TS_K8S_BIN/kubectl"
KWOK_STAGES="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kwok-stages.yaml"

# ------------------------------------------------------------ preconditions
command -v openssl >/dev/null || ts_die "openssl is needed for the PKI (apt-get install openssl)"
bins=("$TS_ETCD_BIN/etcd" "$TS_K8S_BIN/kube-apiserver" "$TS_K8S_BIN/kube-controller-manager"
  "$TS_K8S_BIN/kube-scheduler" "$KUBECTL")
[ "$WITH_KWOK" = 1 ] && bins+=("$TS_KWOK_BIN/kwok")
[ "$WITH_KUEUE" = 1 ] && bins+=("$TS_KUEUE_DIR/kueue")
[ "$WITH_JOBSET" = 1 ] && bins+=("$TS_JOBSET_DIR/jobset")
[ "$WITH_KUEUE$WITH_JOBSET" = 00 ] || command -v python3 >/dev/null ||
  ts_die "python3 is needed to install the webhooks of Kueue and JobSet (local_webhooks; apt-get install python3)"
if [ "$WITH_KUEUE" = 1 ]; then
  [ "$(id -u)" = 0 ] || ts_die "WITH_KUEUE=1 needs root: Kueue reads its metrics certificate from /etc/kueue/metrics/certs"
fi
for b in "${bins[@]}"; do
  [ -x "$b" ] || ts_die "missing $b; run test/cluster/build.sh first"
done
[ "$WITH_KWOK" != 1 ] || [ -r "$KWOK_STAGES" ] || ts_die "missing $KWOK_STAGES"

mkdir -p "$TS_STATE"
TS_STATE="$(cd "$TS_STATE" && pwd -P)"
# Serialise up.sh/down.sh on one state dir. fd 9 is closed for every started
# process, so the lock ends with this script.
exec 9>"$TS_STATE/.lock"
flock -n 9 || ts_die "another up.sh/down.sh is working on $TS_STATE"
: >"$TS_STATE/.trainsonnet-cluster" # marks the dir as ours (down.sh CLEAN=1 checks it)

running=()
for name in "${TS_COMPONENTS[@]}"; do
  if pid="$(ts_recorded_pid "$name")"; then running+=("$name=$pid"); fi
done
[ "${#running[@]}" -eq 0 ] ||
  ts_die "a cluster from $TS_STATE is already running (${running[*]}); run test/cluster/down.sh first"
rm -f "$TS_STATE"/pids/*.pid # stale records of processes that are gone

busy=()
ports=("etcd:$TS_ETCD_PORT" "etcd-peer:$TS_ETCD_PEER_PORT" "kube-apiserver:$TS_API_PORT")
[ "$WITH_KUEUE" = 1 ] && ports+=("kueue-webhook:$KUEUE_WEBHOOK_PORT" "kueue-health:$KUEUE_HEALTH_PORT")
[ "$WITH_JOBSET" = 1 ] && ports+=("jobset-webhook:$JOBSET_WEBHOOK_PORT" "jobset-health:$JOBSET_HEALTH_PORT")
for p in "${ports[@]}"; do
  if ts_port_in_use "${p#*:}"; then busy+=("127.0.0.1:${p#*:} (${p%%:*})"); fi
done
[ "${#busy[@]}" -eq 0 ] ||
  ts_die "port in use: ${busy[*]}; stop its owner or set TRAINSONNET_{ETCD,ETCD_PEER,API,KUEUE_WEBHOOK,KUEUE_HEALTH,JOBSET_WEBHOOK,JOBSET_HEALTH}_PORT"

mkdir -p "$TS_STATE"/{pki,pids,logs}

# From here on, a failure stops what was started. fd 8 keeps our stderr: a
# signal trap can fire inside a readiness probe whose stderr goes to
# /dev/null, and the EXIT trap then inherits that redirection.
exec 8>&2
started=0
on_exit() {
  local rc=$?
  exec 2>&8
  if [ "$rc" -ne 0 ] && [ "$started" = 1 ]; then
    ts_log "start-up failed; stopping what was started (logs: $TS_STATE/logs)"
    ts_stop jobset kueue kwok kube-scheduler kube-controller-manager kube-apiserver || true
    ts_stop etcd || true
  fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------- PKI
PKI="$TS_STATE/pki"
pki_files=(ca.crt ca.key apiserver.crt apiserver.key admin.crt admin.key
  apiserver-kubelet-client.crt apiserver-kubelet-client.key
  kube-controller-manager.crt kube-controller-manager.key
  kube-scheduler.crt kube-scheduler.key sa.key sa.pub)

# issue NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]: an ECDSA P-256
# key NAME.key and a certificate NAME.crt signed by the CA. ECDSA keeps the
# whole PKI at a few tens of milliseconds (RSA-2048: ~0.6 s).
issue() {
  local name="$1" subj="$2" eku="$3" san="${4:-}"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "$subj" -keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$eku"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -extfile "$PKI/$name.ext" \
    -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

have_pki=1
for f in "${pki_files[@]}"; do [ -s "$PKI/$f" ] || have_pki=0; done
if [ "$have_pki" = 1 ]; then
  ts_log "reusing PKI in $PKI"
else
  t=$(date +%s.%N)
  rm -f "$PKI"/*
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -subj "/CN=trainsonnet-test-ca" -days 3650 \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
      -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
    issue apiserver "/CN=kube-apiserver" serverAuth \
      "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    issue admin "/O=system:masters/CN=trainsonnet-admin" clientAuth
    # The API server's identity towards kubelets (logs, exec, port-forward).
    issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
    issue kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
    issue kube-scheduler "/CN=system:kube-scheduler" clientAuth
    # ServiceAccount token signing key (ES256).
    openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/sa.key"
    openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  )
  chmod 644 "$PKI"/*.crt "$PKI/sa.pub"
  ts_log "PKI created in $(ts_since "$t")"
fi

# kubeconfig FILE CERT_NAME USER: a self-contained kubeconfig (data inlined).
kubeconfig() {
  local tmp="$1.tmp"
  (
    umask 077
    cat >"$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainsonnet
  cluster:
    server: https://127.0.0.1:${TS_API_PORT}
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $3
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$2.crt")
    client-key-data: $(base64 -w0 "$PKI/$2.key")
contexts:
- name: trainsonnet
  context: {cluster: trainsonnet, user: $3, namespace: default}
current-context: trainsonnet
EOF
  )
  mv -f "$tmp" "$1"
}
KCFG="$TS_STATE/kubeconfig"
kubeconfig "$KCFG" admin trainsonnet-admin
kubeconfig "$TS_STATE/kube-controller-manager.kubeconfig" kube-controller-manager system:kube-controller-manager
kubeconfig "$TS_STATE/kube-scheduler.kubeconfig" kube-scheduler system:kube-scheduler

# ------------------------------------------------------------------ helpers
declare -A t_start=()

# start NAME EXE ARGS...: runs EXE in the background with its output in
# logs/NAME.log and records it. stdin is /dev/null and fds 8 and 9 are
# closed, so callers reading our output through a pipe are never held open.
start() {
  local name="$1" exe pid
  exe="$(readlink -f "$2")"
  shift 2
  started=1
  t_start[$name]=$(date +%s.%N)
  "$exe" "$@" </dev/null >"$TS_STATE/logs/$name.log" 2>&1 8>&- 9>&- &
  pid=$!
  ts_record "$name" "$pid" "$exe" || ts_die "$name exited at once: $(tail -n 5 "$TS_STATE/logs/$name.log")"
}

# check_alive: fails with the end of its log if a started component died.
check_alive() {
  local f name
  for f in "$TS_STATE"/pids/*.pid; do
    [ -e "$f" ] || continue
    name="$(basename "$f" .pid)"
    if ! ts_recorded_pid "$name" >/dev/null; then
      tail -n 20 "$TS_STATE/logs/$name.log" >&2
      ts_die "$name exited during start-up; log: $TS_STATE/logs/$name.log"
    fi
  done
}

# wait_ready NAME WHAT CMD...: polls CMD until it succeeds, UP_TIMEOUT at most.
wait_ready() {
  local name="$1" what="$2" deadline
  shift 2
  deadline=$(($(date +%s) + UP_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    check_alive
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 20 "$TS_STATE/logs/$name.log" >&2
      ts_die "timed out after ${UP_TIMEOUT}s waiting for $what; log: $TS_STATE/logs/$name.log"
    fi
    sleep 0.1
  done
  ts_log "$what: ready $(ts_since "${t_start[$name]}") after start (total $(ts_since "$TS_T0"))"
}

etcd_healthy() {
  local resp
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash
  resp="$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" &&
    printf "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 && cat <&3' _ "$TS_ETCD_PORT")" || return 1
  [[ "$resp" == *'"health":"true"'* ]]
}

# Each request bounded (a readiness poll tries again; a step with
# ts_retry), never so short that a busy API server misses it: a 5 s bound
# once failed a loaded machine's start-up on `kubectl apply` fetching the
# OpenAPI document.
kc() { "$KUBECTL" --kubeconfig="$KCFG" --request-timeout=30s "$@"; }

# Extra flags from the environment, split on white space.
read -r -a etcd_extra <<<"${TRAINSONNET_ETCD_EXTRA_ARGS:-}"
read -r -a apiserver_extra <<<"${TRAINSONNET_APISERVER_EXTRA_ARGS:-}"
read -r -a kcm_extra <<<"${TRAINSONNET_KCM_EXTRA_ARGS:-}"
read -r -a scheduler_extra <<<"${TRAINSONNET_SCHEDULER_EXTRA_ARGS:-}"
read -r -a kwok_extra <<<"${TRAINSONNET_KWOK_EXTRA_ARGS:-}"
read -r -a kueue_extra <<<"${TRAINSONNET_KUEUE_EXTRA_ARGS:-}"

# --------------------------------------------------------------------- etcd
# Every start is a fresh cluster unless TRAINSONNET_KEEP_DATA=1; the PKI is
# kept, so certificates issued from pki/ca.key stay valid.
if [ "${TRAINSONNET_KEEP_DATA:-0}" != 1 ]; then rm -rf "$TS_STATE/etcd"; fi
# --unsafe-no-fsync: the data is thrown away anyway; saves fsync latency.
start etcd "$TS_ETCD_BIN/etcd" \
  --name=trainsonnet --data-dir="$TS_STATE/etcd" \
  --listen-client-urls="http://127.0.0.1:$TS_ETCD_PORT" \
  --advertise-client-urls="http://127.0.0.1:$TS_ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$TS_ETCD_PEER_PORT" \
  --initial-advertise-peer-urls="http://127.0.0.1:$TS_ETCD_PEER_PORT" \
  --initial-cluster="trainsonnet=http://127.0.0.1:$TS_ETCD_PEER_PORT" \
  --unsafe-no-fsync \
  "${etcd_extra[@]}"
wait_ready etcd "etcd (127.0.0.1:$TS_ETCD_PORT)" etcd_healthy

# ----------------------------------------------------------- kube-apiserver
# The node-support flags (client CA, NodeRestriction, Node authorizer, the
# kubelet client cert, InternalIP) let a real kubelet join with a
# CN=system:node:<name>,O=system:nodes cert signed by pki/ca.key, and make
# `kubectl logs/exec` reach it. --endpoint-reconciler-type=none: a loopback
# advertise address is refused by the endpoint reconciler every 10 s.
start kube-apiserver "$TS_K8S_BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$TS_ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$TS_API_PORT" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" \
  --service-account-signing-key-file="$PKI/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --endpoint-reconciler-type=none \
  --profiling=false \
  "${apiserver_extra[@]}"
wait_ready kube-apiserver "kube-apiserver (https://127.0.0.1:$TS_API_PORT/readyz)" kc get --raw=/readyz

# ------------------------------------------- controllers, scheduler, kwok
start kube-controller-manager "$TS_K8S_BIN/kube-controller-manager" \
  --kubeconfig="$TS_STATE/kube-controller-manager.kubeconfig" \
  --leader-elect=false --secure-port=0 \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$PKI/sa.key" \
  --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --cluster-name=trainsonnet \
  "${kcm_extra[@]}"
start kube-scheduler "$TS_K8S_BIN/kube-scheduler" \
  --kubeconfig="$TS_STATE/kube-scheduler.kubeconfig" \
  --leader-elect=false --secure-port=0 \
  "${scheduler_extra[@]}"
if [ "$WITH_KWOK" = 1 ]; then
  # --node-lease-duration-seconds: left at its default, kwok 0.7 renews no
  # Lease and posts node status only every ~10 min, so the node lifecycle
  # controller marks its nodes NotReady (and their pods Ready=False) after
  # ~50 s. The fake pod/node IPs are documentation ranges, never dialled.
  # --config: kwok's default pod stages without pod-complete, which would
  # mark every Job pod Succeeded at once (see kwok-stages.yaml).
  start kwok "$TS_KWOK_BIN/kwok" \
    --kubeconfig="$KCFG" \
    --config="$KWOK_STAGES" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 \
    --cidr=198.51.100.0/24 --node-ip=192.0.2.1 \
    "${kwok_extra[@]}"
fi
# Pods can only be created once the ServiceAccount controller made `default`;
# their token volume also needs the kube-root-ca.crt ConfigMap.
wait_ready kube-controller-manager "default ServiceAccount" kc -n default get serviceaccount default
wait_ready kube-controller-manager "kube-root-ca.crt ConfigMap" kc -n default get configmap kube-root-ca.crt
check_alive

# readyz PORT: 127.0.0.1:PORT/readyz answers 200 (a host process's health
# endpoint: Kueue's, JobSet's).
readyz() {
  local resp
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash
  resp="$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" &&
    printf "GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 && cat <&3' _ "$1")" || return 1
  [[ "$resp" == "HTTP/1."?" 200"* ]]
}

# local_webhooks NAME PORT LABEL <module.json >local.json: a controller's
# webhook configurations (kubectl's JSON of its module's manifests) served
# by the host process at https://127.0.0.1:PORT with the harness CA, named
# trainsonnet-NAME-..., and seen only by namespaces labelled LABEL=true
# (and cluster-scoped objects).
local_webhooks() {
  python3 -c '
import base64, json, sys
name, port, ca, label = sys.argv[1], sys.argv[2], open(sys.argv[3], "rb").read(), sys.argv[4]
text, objs, i = sys.stdin.read(), [], 0
while text[i:].strip():  # one JSON object per document
    o, i = json.JSONDecoder().raw_decode(text, len(text) - len(text[i:].lstrip()))
    objs.append(o)
for o in objs:
    o["metadata"]["name"] = "trainsonnet-%s-%s" % (name, o["metadata"]["name"])
    for w in o["webhooks"]:
        path = w["clientConfig"]["service"]["path"]
        w["clientConfig"] = {"url": "https://127.0.0.1:%s%s" % (port, path), "caBundle": base64.b64encode(ca).decode()}
        w["namespaceSelector"] = {"matchLabels": {label: "true"}}
json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, sys.stdout)
' "$1" "$2" "$PKI/ca.crt" "$3"
}

# -------------------------------------------------------------------- kueue
# Kueue as a host process, installed as its module's manifests say but for
# what a process outside the cluster needs: its webhooks served at
# 127.0.0.1 with a certificate of our CA (its own certificate management
# issues one only for <service>.<namespace>.svc), its own identity bound to
# its ClusterRole, and no leader election. Its webhooks see only the
# objects of namespaces labelled trainsonnet.test/kueue=true (and
# cluster-scoped ones, such as ClusterQueues), so the suites that do not
# test queues never depend on it.
if [ "$WITH_KUEUE" = 1 ]; then
  t=$(date +%s.%N)
  kdir="$TS_STATE/kueue"
  mkdir -p "$kdir/certs"
  ts_retry "$UP_TIMEOUT" "kueue: its CRDs" kc apply --server-side --force-conflicts -f "$TS_KUEUE_DIR/crds.yaml" >/dev/null
  ts_retry "$UP_TIMEOUT" "kueue: its CRDs established" \
    kc wait --for condition=established --timeout="${UP_TIMEOUT}s" -f "$TS_KUEUE_DIR/crds.yaml" >/dev/null
  [ -s "$PKI/kueue.crt" ] || issue kueue "/CN=trainsonnet:kueue" clientAuth
  [ -s "$PKI/kueue-webhook.crt" ] || issue kueue-webhook "/CN=kueue-webhook" serverAuth "IP:127.0.0.1"
  kubeconfig "$kdir/kubeconfig" kueue trainsonnet:kueue
  cp "$PKI/kueue-webhook.crt" "$kdir/certs/tls.crt"
  cp "$PKI/kueue-webhook.key" "$kdir/certs/tls.key"
  # Kueue reads a metrics certificate from this fixed path whenever its own
  # certificate management is off (cmd/kueue/main.go), metrics off or not:
  # a pair it can load is all it needs (it serves no metrics). Written once,
  # under a lock: two clusters of this harness may start side by side
  # (test/e2e.sh), and a Kueue that read one's certificate and the other's
  # key would not start.
  mkdir -p /etc/kueue/metrics/certs
  (
    flock 7
    m=/etc/kueue/metrics/certs
    crt_pub="$(openssl x509 -in "$m/tls.crt" -noout -pubkey 2>/dev/null || true)"
    if [ -z "$crt_pub" ] || [ "$crt_pub" != "$(openssl pkey -in "$m/tls.key" -pubout 2>/dev/null || true)" ]; then
      cp "$kdir/certs/tls.crt" "$m/.tls.crt.new" && cp "$kdir/certs/tls.key" "$m/.tls.key.new"
      mv -f "$m/.tls.key.new" "$m/tls.key" && mv -f "$m/.tls.crt.new" "$m/tls.crt"
    fi
  ) 7>/etc/kueue/metrics/.trainsonnet.lock
  {
    printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: kueue-system}\n---\n'
    sed -e 's/^  name: manager-role$/  name: trainsonnet-kueue/' -e 's/^  name: manager-secrets-role$/  name: trainsonnet-kueue/' \
      -e 's/^  namespace: system$/  namespace: kueue-system/' "$TS_KUEUE_DIR/role.yaml"
    for kind in ClusterRole Role; do
      printf -- '---\napiVersion: rbac.authorization.k8s.io/v1\nkind: %sBinding\n' "$kind"
      printf 'metadata: {name: trainsonnet-kueue, namespace: kueue-system}\n'
      printf 'roleRef: {apiGroup: rbac.authorization.k8s.io, kind: %s, name: trainsonnet-kueue}\n' "$kind"
      printf 'subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "trainsonnet:kueue"}]\n'
    done
  } >"$kdir/rbac.yaml"
  ts_retry "$UP_TIMEOUT" "kueue: its RBAC" kc apply -f "$kdir/rbac.yaml" >/dev/null
  # JobSet's integration where its controller runs (the JobSet CRD comes
  # after Kueue starts: Kueue sets the integration up once it appears)
  kueue_jobset=''
  [ "$WITH_JOBSET" = 1 ] && kueue_jobset=', jobset.x-k8s.io/jobset'
  cat >"$kdir/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:$KUEUE_HEALTH_PORT"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $KUEUE_WEBHOOK_PORT, certDir: "$kdir/certs"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
manageJobsWithoutQueueName: false
integrations:
  frameworks: [batch/job, pod, deployment$kueue_jobset]
EOF
  # VisibilityOnDemand off: it would serve an aggregated API on :8082.
  start kueue "$TS_KUEUE_DIR/kueue" --config="$kdir/config.yaml" --kubeconfig="$kdir/kubeconfig" \
    --feature-gates=VisibilityOnDemand=false --zap-log-level=2 "${kueue_extra[@]}"
  wait_ready kueue "kueue (127.0.0.1:$KUEUE_HEALTH_PORT/readyz)" readyz "$KUEUE_HEALTH_PORT"
  # Only now the webhooks (failurePolicy Fail), pointed at the process.
  ts_retry "$UP_TIMEOUT" "kueue: reading its webhooks" \
    kc create --dry-run=client -o json -f "$TS_KUEUE_DIR/webhooks.yaml" >"$kdir/webhooks.json"
  local_webhooks kueue "$KUEUE_WEBHOOK_PORT" trainsonnet.test/kueue <"$kdir/webhooks.json" >"$kdir/webhooks-local.json"
  ts_retry "$UP_TIMEOUT" "kueue: its webhooks" kc apply -f "$kdir/webhooks-local.json" >/dev/null
  ts_log "kueue: installed and serving its webhooks $(ts_since "$t") after the control plane (total $(ts_since "$TS_T0"))"
fi

# ------------------------------------------------------------------- jobset
# The JobSet controller as a host process, as Kueue above: its webhooks at
# 127.0.0.1 with a certificate of our CA (its certificate management off),
# its own identity bound to its ClusterRole, no leader election, and its
# webhooks (the JobSet's, and the pod webhook that places a JobSet's pods)
# see only the objects of namespaces labelled trainsonnet.test/jobset=true.
read -r -a jobset_extra <<<"${TRAINSONNET_JOBSET_EXTRA_ARGS:-}"
if [ "$WITH_JOBSET" = 1 ]; then
  t=$(date +%s.%N)
  jdir="$TS_STATE/jobset"
  mkdir -p "$jdir/certs"
  ts_retry "$UP_TIMEOUT" "jobset: its CRD" kc apply --server-side --force-conflicts -f "$TS_JOBSET_DIR/crds.yaml" >/dev/null
  ts_retry "$UP_TIMEOUT" "jobset: its CRD established" \
    kc wait --for condition=established --timeout="${UP_TIMEOUT}s" -f "$TS_JOBSET_DIR/crds.yaml" >/dev/null
  [ -s "$PKI/jobset.crt" ] || issue jobset "/CN=trainsonnet:jobset" clientAuth
  [ -s "$PKI/jobset-webhook.crt" ] || issue jobset-webhook "/CN=jobset-webhook" serverAuth "IP:127.0.0.1"
  kubeconfig "$jdir/kubeconfig" jobset trainsonnet:jobset
  cp "$PKI/jobset-webhook.crt" "$jdir/certs/tls.crt"
  cp "$PKI/jobset-webhook.key" "$jdir/certs/tls.key"
  {
    sed -e 's/^  name: manager-role$/  name: trainsonnet-jobset/' "$TS_JOBSET_DIR/role.yaml"
    printf -- '---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n'
    printf 'metadata: {name: trainsonnet-jobset}\n'
    printf 'roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: trainsonnet-jobset}\n'
    printf 'subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "trainsonnet:jobset"}]\n'
  } >"$jdir/rbac.yaml"
  ts_retry "$UP_TIMEOUT" "jobset: its RBAC" kc apply -f "$jdir/rbac.yaml" >/dev/null
  cat >"$jdir/config.yaml" <<EOF
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:$JOBSET_HEALTH_PORT"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $JOBSET_WEBHOOK_PORT, certDir: "$jdir/certs"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
EOF
  start jobset "$TS_JOBSET_DIR/jobset" --config="$jdir/config.yaml" --kubeconfig="$jdir/kubeconfig" \
    --zap-log-level=2 "${jobset_extra[@]}"
  wait_ready jobset "jobset (127.0.0.1:$JOBSET_HEALTH_PORT/readyz)" readyz "$JOBSET_HEALTH_PORT"
  ts_retry "$UP_TIMEOUT" "jobset: reading its webhooks" \
    kc create --dry-run=client -o json -f "$TS_JOBSET_DIR/webhooks.yaml" >"$jdir/webhooks.json"
  local_webhooks jobset "$JOBSET_WEBHOOK_PORT" trainsonnet.test/jobset <"$jdir/webhooks.json" >"$jdir/webhooks-local.json"
  ts_retry "$UP_TIMEOUT" "jobset: its webhooks" kc apply -f "$jdir/webhooks-local.json" >/dev/null
  ts_log "jobset: installed and serving its webhooks $(ts_since "$t") after the control plane (total $(ts_since "$TS_T0"))"
fi

# ----------------------------------------------------------------- env file
{
  printf '# written by test/cluster/up.sh; source it\n'
  printf 'export KUBECONFIG=%q\n' "$KCFG"
  printf 'export KUBECTL=%q\n' "$(readlink -f "$KUBECTL")"
  printf 'export TRAINSONNET_STATE=%q\n' "$TS_STATE"
  printf 'export TRAINSONNET_PKI=%q\n' "$PKI"
  printf 'export TRAINSONNET_APISERVER=%q\n' "https://127.0.0.1:$TS_API_PORT"
  printf 'export TRAINSONNET_K8S_BIN=%q\n' "$(readlink -f "$TS_K8S_BIN")"
  printf 'export TRAINSONNET_KWOK=%q\n' "$WITH_KWOK"
  printf 'export TRAINSONNET_KUEUE=%q\n' "$WITH_KUEUE"
  printf 'export TRAINSONNET_JOBSET=%q\n' "$WITH_JOBSET"
} >"$TS_STATE/env.tmp"
mv -f "$TS_STATE/env.tmp" "$TS_STATE/env"

pids=()
for f in "$TS_STATE"/pids/*.pid; do pids+=("$(basename "$f" .pid)=$(cut -d' ' -f1 "$f")"); done
ts_log "cluster up in $(ts_since "$TS_T0"): ${pids[*]}"
ts_log "use it with: . $TS_STATE/env"

# shellcheck shell=bash disable=SC2034 source-path=SCRIPTDIR
# Shared settings and helpers for the scripts in test/cluster/. Sourced, never
# executed. Everything here can be overridden through the environment.

# shellcheck source=versions.sh
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

# Binary cache, outside the repository, keyed by version.
TS_CACHE="${TRAINSONNET_CACHE:-/var/cache/trainsonnet}"
TS_K8S_BIN="$TS_CACHE/k8s-$TRAINSONNET_K8S_VERSION"
TS_ETCD_BIN="$TS_CACHE/etcd-$TRAINSONNET_ETCD_VERSION"
TS_KWOK_BIN="$TS_CACHE/kwok-$TRAINSONNET_KWOK_VERSION"
TS_KUEUE_DIR="$TS_CACHE/kueue-$TRAINSONNET_KUEUE_VERSION"
TS_JOBSET_DIR="$TS_CACHE/jobset-$TRAINSONNET_JOBSET_VERSION"
TS_BUILD_ROOT="$TS_CACHE/build"
TS_TRAINING_OPERATOR_DIR="$TS_CACHE/training-operator-$TRAINSONNET_TRAINING_OPERATOR_VERSION"
TS_MPI_OPERATOR_DIR="$TS_CACHE/mpi-operator-$TRAINSONNET_MPI_OPERATOR_VERSION"
TS_TRAINER_DIR="$TS_CACHE/trainer-$TRAINSONNET_TRAINER_VERSION"

# The Kubernetes binaries built together in one `go build`.
# kubelet and kube-proxy are the real node's (test/node/).
TS_K8S_COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)

# Cluster state (PKI, data, logs, PIDs, kubeconfig, env file).
TS_STATE="${TRAINSONNET_STATE:-/tmp/trainsonnet-cluster}"

# Loopback ports; not the defaults so a distro etcd (2379) or another cluster
# (6443) cannot clash.
TS_ETCD_PORT="${TRAINSONNET_ETCD_PORT:-12379}"
TS_ETCD_PEER_PORT="${TRAINSONNET_ETCD_PEER_PORT:-12380}"
TS_API_PORT="${TRAINSONNET_API_PORT:-16443}"

# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
TS_PIDS="$TS_STATE/pids"

# The components in stop order; etcd goes last, on its own.
TS_COMPONENTS=(jobset kueue kwok kube-scheduler kube-controller-manager kube-apiserver etcd)


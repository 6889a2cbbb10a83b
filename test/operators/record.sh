#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Re-record what the Kubeflow operators create for their upstream examples
# (test/operators/testdata): builds the operators once into the cache
# (test/cluster/build.sh operators), starts a control plane with kwok nodes,
# runs each operator as a host process, and writes one file per example.
# CI never runs this: the migration tests compare with the committed files.
#
#   test/operators/record.sh          (make record-operators)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
TS_NAME=record
# shellcheck source=../cluster/common.sh
. "$here/../cluster/common.sh"

"$root/test/cluster/build.sh" operators
cd "$root/test"
go build -o "$TS_BUILD_ROOT/record-operators" ./operators/record

# The upstream examples, and trainsonnet's own inputs beside them
# (test/operators/examples/<operator>/: what no upstream example shows)
examples="$(mktemp -d)"
trap 'rm -rf "$examples"' EXIT
for op in training-operator:"$TS_TRAINING_OPERATOR_DIR" mpi-operator:"$TS_MPI_OPERATOR_DIR"; do
  mkdir -p "$examples/${op%%:*}"
  cp -R "${op#*:}/examples/." "$examples/${op%%:*}/"
  if [ -d "$here/examples/${op%%:*}" ]; then cp -R "$here/examples/${op%%:*}/." "$examples/${op%%:*}/"; fi
done

# shellcheck disable=SC2016 # expanded by the inner shell, under the cluster's env
WITH_KWOK=1 TRAINSONNET_STATE="${TRAINSONNET_STATE:-/tmp/trainsonnet-record}" \
  "$root/test/cluster/with-cluster.sh" env \
  REC="$TS_BUILD_ROOT/record-operators" OUT="$here/testdata" EX="$examples" K8S="$TRAINSONNET_K8S_VERSION" \
  TO_DIR="$TS_TRAINING_OPERATOR_DIR" TO_V="$TRAINSONNET_TRAINING_OPERATOR_VERSION" \
  MPI_DIR="$TS_MPI_OPERATOR_DIR" MPI_V="$TRAINSONNET_MPI_OPERATOR_VERSION" \
  bash -c '
    set -euo pipefail
    rm -rf "$OUT.new" && mkdir -p "$OUT.new"
    TRAINSONNET_K8S_VERSION="$K8S" "$REC" -operator training-operator -version "$TO_V" \
      -module github.com/kubeflow/training-operator -bin "$TO_DIR/training-operator" \
      -crds "$TO_DIR/crds.yaml" -examples "$EX/training-operator" \
      -log "$TRAINSONNET_STATE/logs/training-operator.log" -out "$OUT.new/training-operator-$TO_V"
    TRAINSONNET_K8S_VERSION="$K8S" "$REC" -operator mpi-operator -version "$MPI_V" \
      -module github.com/kubeflow/mpi-operator -bin "$MPI_DIR/mpi-operator" \
      -crds "$MPI_DIR/crds.yaml" -examples "$EX/mpi-operator" \
      -log "$TRAINSONNET_STATE/logs/mpi-operator.log" -out "$OUT.new/mpi-operator-$MPI_V"
    rm -rf "$OUT" && mv "$OUT.new" "$OUT"
  '
ts_log "recorded into $here/testdata"

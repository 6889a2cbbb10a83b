#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Re-record what the Kubeflow operators create for their upstream examples
# (test/operators/testdata): builds the operators once into the cache
# (test/cluster/build.sh operators), starts a control plane with kwok nodes
# and the JobSet controller, runs each operator as a host process, and
# writes one file per example. CI never runs this: the migration tests
# compare with the committed files.
#
#   test/operators/record.sh [OPERATOR]...   (make record-operators)
#
# OPERATOR: training-operator, mpi-operator, trainer (default: all three);
# the others' recordings are kept as they are.
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
ops=("$@")
[ "${#ops[@]}" -gt 0 ] || ops=(training-operator mpi-operator trainer)
for op in training-operator:"$TS_TRAINING_OPERATOR_DIR" mpi-operator:"$TS_MPI_OPERATOR_DIR" trainer:"$TS_TRAINER_DIR"; do
  mkdir -p "$examples/${op%%:*}"
  cp -R "${op#*:}/examples/." "$examples/${op%%:*}/"
  if [ -d "$here/examples/${op%%:*}" ]; then cp -R "$here/examples/${op%%:*}/." "$examples/${op%%:*}/"; fi
done

# shellcheck disable=SC2016 # expanded by the inner shell, under the cluster's env
WITH_KWOK=1 WITH_JOBSET=1 TRAINSONNET_STATE="${TRAINSONNET_STATE:-/tmp/trainsonnet-record}" \
  "$root/test/cluster/with-cluster.sh" env \
  REC="$TS_BUILD_ROOT/record-operators" OUT="$here/testdata" EX="$examples" K8S="$TRAINSONNET_K8S_VERSION" \
  TO_DIR="$TS_TRAINING_OPERATOR_DIR" TO_V="$TRAINSONNET_TRAINING_OPERATOR_VERSION" \
  MPI_DIR="$TS_MPI_OPERATOR_DIR" MPI_V="$TRAINSONNET_MPI_OPERATOR_VERSION" \
  TR_DIR="$TS_TRAINER_DIR" TR_V="$TRAINSONNET_TRAINER_VERSION" OPS="${ops[*]}" \
  bash -c '
    set -euo pipefail
    # record OPERATOR VERSION MODULE BIN [FLAG]...: into OUT, replacing
    # that operator'"'"'s recordings in one step
    record() {
      local op=$1 v=$2 module=$3 bin=$4; shift 4
      rm -rf "$OUT/.new-$op-$v"
      TRAINSONNET_K8S_VERSION="$K8S" "$REC" -operator "$op" -version "$v" -module "$module" -bin "$bin" \
        -examples "$EX/$op" -log "$TRAINSONNET_STATE/logs/$op.log" -out "$OUT/.new-$op-$v" "$@"
      rm -rf "${OUT:?}/$op-$v" && mv "$OUT/.new-$op-$v" "$OUT/$op-$v"
    }
    for op in $OPS; do
      case $op in
        training-operator) record training-operator "$TO_V" github.com/kubeflow/training-operator \
          "$TO_DIR/training-operator" -crds "$TO_DIR/crds.yaml" ;;
        mpi-operator) record mpi-operator "$MPI_V" github.com/kubeflow/mpi-operator \
          "$MPI_DIR/mpi-operator" -crds "$MPI_DIR/crds.yaml" ;;
        trainer) mkdir -p "$TRAINSONNET_STATE/trainer"
          record trainer "$TR_V" github.com/kubeflow/trainer/v2 "$TR_DIR/trainer" -crds "$TR_DIR/crds.yaml" \
            -install "$EX/trainer/.install" -state "$TRAINSONNET_STATE/trainer" ;;
        *) echo "record.sh: unknown operator $op (training-operator, mpi-operator, trainer)" >&2; exit 2 ;;
      esac
    done
  '
ts_log "recorded ${ops[*]} into $here/testdata"

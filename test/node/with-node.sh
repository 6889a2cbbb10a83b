#!/usr/bin/env bash
# Run a command against a fresh control plane with one real node, and always
# tear both down:
#
#   test/node/with-node.sh CMD [ARG...]
#   test/node/with-node.sh go test ./test/node/ -run Smoke -v
#
# The harness's one wrapper, test/cluster/with-cluster.sh, with WITH_NODE=1:
# see there for what it builds, starts, runs and stops, and its exit codes.
set -euo pipefail
WITH_NODE=1 TS_NAME="test/node/with-node.sh" exec "$(dirname "$0")/../cluster/with-cluster.sh" "$@"

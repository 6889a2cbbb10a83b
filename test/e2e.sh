#!/usr/bin/env bash
# Run every end-to-end suite, on throw-away Kubernetes built on this machine:
#
#   test/e2e.sh [--with-check] [GO TEST FLAGS...]   # e.g. test/e2e.sh -run 'TestSweep|TestKwok'
#
# `make test` is `test/e2e.sh --with-check`: the same, with `make check`
# among the steps. The steps, and what runs beside what (a machine has 2
# cores: what waits on the network or on pods runs beside what uses the
# CPU):
#
#   image          test/node/build.sh packages images: the node's test image
#                  (debootstrap of Debian packages: mostly waiting on the
#                  network), started first and left to run beside the builds
#   build: cluster test/cluster/build.sh etcd k8s kueue jobset: what the
#                  node's suites need of test/cluster (kwok builds in the
#                  control plane's step)
#   build: node    test/node/build.sh coredns netpol tools
#   compile tests  the node's test binaries, before its cluster starts, so
#                  that a compile error fails here at once
#   then, side by side, each suite on a cluster of its own (the node's at
#   normal priority, the others at nice 19: they take the CPU it leaves):
#   node           test/node, then test/jobs, under test/node/with-node.sh
#                  (with Kueue and JobSet), once the image is built: a real kubelet node
#                  runs the generated jobs to completion, trains, rides out
#                  the fault cases (the longest step; it mostly waits on pods)
#   control plane  test/e2e and test/kube under test/cluster/with-cluster.sh
#                  (which builds kwok) with kwok, Kueue and the
#                  JobSet controller, on a control
#                  plane of its own
#                  ($TRAINSONNET_STATE-kwok, ports 2xxxx): every golden
#                  manifest, example overlay and the random sweep applied to
#                  a real API server, fake GPU nodes, every prototype's job
#                  on a Kueue queue
#   scripts        test/scripts: lib/assets/mpi.sh and a rendered ConfigMap
#                  run for real (sshd, mpirun) in network namespaces
#   check          make check (with --with-check): vet, gofmt, shellcheck,
#                  golangci-lint, the hermetic tests
#
# Everything built is cached under /var/cache/trainsonnet (seconds when
# present). Each step's output goes to $TRAINSONNET_TEST_LOGS/<step>.log
# (default /tmp/trainsonnet-test-logs) and is printed whole when the step
# ends; while steps run side by side, a line every 5 minutes says which.
# At the end, one line per step says how long it took and how it ended.
# Each step stops what it started, on exit, Ctrl-C or SIGTERM.
#
# Exits 0 when every step passed, else the first failing step's code
# (130/143 when interrupted); every step runs even after another failed.
#
# An existing cluster: TRAINSONNET_USE_EXISTING_CLUSTER=1 and KUBECONFIG
# (and KUBECTL, else the cached kubectl, built if missing). Nothing is
# started or stopped, and the suites run one after another against it; the
# kwok tests run only if TRAINSONNET_E2E_KWOK=1 is set by the caller (kwok
# must then run with test/cluster/kwok-stages.yaml), the Kueue tests only
# with TRAINSONNET_E2E_KUEUE=1 and TRAINSONNET_KUEUE=1 (Kueue's webhooks
# must see namespaces labelled trainsonnet.test/kueue), and the node suites
# only with TRAINSONNET_E2E_NODE=1 plus the variables of test/node/README.md
# (the test image must be on the cluster's nodes).
#
# Environment:
#   TRAINSONNET_E2E_TIMEOUT    go test -timeout of each package (default 45m)
#   TRAINSONNET_E2E_PARALLEL   go test -parallel (default 16): the tests
#                              mostly wait for the API server
#   TRAINSONNET_JOBS_PARALLEL  cases of test/jobs on the node at once
#                              (test/jobs/doc.go)
#   TRAINSONNET_SWEEP_SEED, TRAINSONNET_SWEEP_N
#                              see test/e2e/doc.go
#   TRAINSONNET_TEST_LOGS      where each step's log goes
#   TRAINSONNET_STATE, TRAINSONNET_*_PORT, ...
#                              see test/cluster/README.md: the node's cluster
#                              uses them as given; the control plane's takes
#                              $TRAINSONNET_STATE-kwok and the ports
#                              TRAINSONNET_KWOK_{ETCD,ETCD_PEER,API,KUEUE_WEBHOOK,KUEUE_HEALTH}_PORT
#                              (default 22379, 22380, 26443, 29443, 28081)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="$repo/test/cluster"
cd "$repo"

log() { printf 'test/e2e.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

with_check=0
if [ "${1:-}" = --with-check ]; then
  with_check=1
  shift
fi

# The Go packages that run against the control plane (and kwok), on the
# real node, and on this host alone.
cluster_suites=(./test/e2e/ ./test/kube/)
node_suites=(./test/node/ ./test/jobs/)
host_suites=(./test/scripts/)

go_test=(go test -count=1 -v -timeout "${TRAINSONNET_E2E_TIMEOUT:-45m}" -parallel "${TRAINSONNET_E2E_PARALLEL:-16}" "$@")

logs="${TRAINSONNET_TEST_LOGS:-/tmp/trainsonnet-test-logs}"
rm -rf "$logs"
mkdir -p "$logs"

# ------------------------------------------------------------------ steps
# A step runs in the background with its output in $logs/<slug>.log, and
# writes when it ended and how into $logs/.<slug>.end; finish waits for
# it, prints its log whole and remembers how it ended. Signals go to every
# running step, which passes them on to its command, which stops what it
# started (with-cluster.sh tears its cluster down).
declare -A step_pid=() step_t0=() step_secs=() step_rc=()
steps=()
t0=$(date +%s)
rc=0

slug() { tr -c 'a-z0-9\n' '-' <<<"$1" | sed 's/--*/-/g; s/-$//'; }

# logged END CMD...: runs CMD, passes SIGTERM and SIGINT on to it, and
# writes "<end time> <exit code>" to END.
# shellcheck disable=SC2317 # invoked in the background by start
logged() {
  local end="$1" c code
  shift
  "$@" &
  c=$!
  trap 'kill -TERM "$c" 2>/dev/null' TERM
  trap 'kill -INT "$c" 2>/dev/null' INT
  while :; do
    code=0
    wait "$c" || code=$?
    kill -0 "$c" 2>/dev/null || break
  done
  printf '%s %s\n' "$(date +%s)" "$code" >"$end"
  return "$code"
}

start() { # start NAME CMD...
  local name="$1" s
  shift
  s="$(slug "$name")"
  steps+=("$name")
  step_t0[$name]=$(date +%s)
  printf '%s %s\n' "${step_t0[$name]}" "$name" >"$logs/.$s.start"
  log "step: $name (log: $logs/$s.log)"
  logged "$logs/.$s.end" "$@" >"$logs/$s.log" 2>&1 &
  step_pid[$name]=$!
}

finish() { # finish NAME: returns the step's exit code
  local name="$1" pid="${step_pid[$1]}" s end code
  s="$(slug "$name")"
  while :; do
    code=0
    wait "$pid" || code=$?
    # A trapped signal interrupts `wait`; wait again until the step ended.
    kill -0 "$pid" 2>/dev/null || break
  done
  step_pid[$name]=""
  end=$(date +%s)
  if [ -s "$logs/.$s.end" ]; then read -r end code <"$logs/.$s.end"; fi
  step_secs[$name]=$((end - step_t0[$name]))
  step_rc[$name]=$code
  printf '\n========== %s (exit code %s, %s s) ==========\n' "$name" "$code" "${step_secs[$name]}"
  cat "$logs/$s.log"
  printf '========== end of %s ==========\n\n' "$name"
  log "step done: $name: exit code $code in ${step_secs[$name]} s"
  if [ "$rc" = 0 ]; then rc=$code; fi
  return "$code"
}

step() { # step NAME CMD...: start and finish
  start "$@"
  finish "$1"
}

# running: the steps started and not ended, with how long they have run.
running() {
  local f s t name now out=()
  now=$(date +%s)
  for f in "$logs"/.*.start; do
    [ -e "$f" ] || continue
    s="${f%.start}"
    [ ! -e "$s.end" ] || continue
    read -r t name <"$f"
    out+=("$name ($((now - t)) s)")
  done
  printf '%s\n' "$(IFS=,; echo "${out[*]}")"
}

# shellcheck disable=SC2317 # invoked by the traps
forward() {
  local name
  for name in "${steps[@]}"; do
    if [ -n "${step_pid[$name]:-}" ]; then kill "-$1" "${step_pid[$name]}" 2>/dev/null || true; fi
  done
}
trap 'forward INT' INT
trap 'forward TERM' TERM

# While steps run side by side their logs wait for their end: say which run.
( while sleep 300; do log "running: $(running)"; done ) &
heartbeat=$!
trap 'kill "$heartbeat" 2>/dev/null || true' EXIT

summary() {
  local name
  kill "$heartbeat" 2>/dev/null || true
  log "where the time went (each step from its start to its end; some ran side by side):"
  for name in "${steps[@]}"; do
    if [ -n "${step_secs[$name]:-}" ]; then
      printf 'test/e2e.sh:   %-21s %5s s  %s\n' "$name" "${step_secs[$name]}" \
        "$([ "${step_rc[$name]}" = 0 ] && echo ok || echo "exit code ${step_rc[$name]}")" >&2
    else
      printf 'test/e2e.sh:   %-21s %5s    not finished\n' "$name" "" >&2
    fi
  done
  log "done in $(($(date +%s) - t0)) s: exit code $rc"
}

# -------------------------------------------------------------- the run
if [ "${TRAINSONNET_USE_EXISTING_CLUSTER:-0}" = 1 ]; then
  [ -n "${KUBECONFIG:-}" ] || die "TRAINSONNET_USE_EXISTING_CLUSTER=1 needs KUBECONFIG"
  if [ "$with_check" = 1 ]; then step check make check || true; fi
  if [ -z "${KUBECTL:-}" ]; then step "build: kubectl" "$cluster/build.sh" k8s || true; fi
  step "compile tests" go test -count=1 -run '^$' "${cluster_suites[@]}" "${node_suites[@]}" "${host_suites[@]}" || true
  step scripts env TRAINSONNET_E2E=1 "${go_test[@]}" "${host_suites[@]}" || true
  step "control plane" env TRAINSONNET_E2E=1 TRAINSONNET_E2E_KWOK="${TRAINSONNET_E2E_KWOK:-0}" \
    TRAINSONNET_E2E_KUEUE="${TRAINSONNET_E2E_KUEUE:-0}" "${go_test[@]}" "${cluster_suites[@]}" || true
  if [ "${TRAINSONNET_E2E_NODE:-0}" = 1 ]; then
    step node env TRAINSONNET_E2E=1 "${go_test[@]}" -p 1 "${node_suites[@]}" || true
  else
    log "node suites skipped: an existing cluster needs TRAINSONNET_E2E_NODE=1 and the test image (test/node/README.md)"
  fi
  summary
  exit "$rc"
fi

# The image first: it mostly waits on the network; the builds use the CPU.
start image "$repo/test/node/build.sh" packages images
# What the node's suites need, first: they are the longest step. kwok (the
# control plane's suites only) builds in their step, beside the node's.
step "build: cluster" "$cluster/build.sh" etcd k8s kueue jobset || true
step "build: node" "$repo/test/node/build.sh" coredns netpol tools || true
# Compile the node's test binaries before its cluster starts: a compile
# error fails here at once, and no node waits for the compiler. (The
# other suites compile theirs in their steps.)
step "compile tests" go test -count=1 -run '^$' "${node_suites[@]}" || true

# Then the suites side by side, and make check beside them: the node's
# suites (the longest) mostly wait on pods, which leaves the CPU to the
# rest. The rest runs at the lowest priority (nice 19): it takes the CPU
# the node's pods leave, and never slows them (the faults of the whole
# node, run alone first, took 423 s beside them at equal priority, 229 s
# alone).
low=(nice -n 19)
start_node() {
  # test/node first, then test/jobs (-p 1): the fault cases that reach the
  # whole node (its API server down, its kubelet restarted) run when no
  # other package's test is on it.
  # -parallel 64: the node's slots (test/jobs) bound its cases, and weigh
  # them all only if every one of them asks.
  start node env WITH_KWOK=0 WITH_KUEUE=1 WITH_JOBSET=1 "$repo/test/node/with-node.sh" \
    env TRAINSONNET_E2E=1 TRAINSONNET_E2E_KUEUE=1 TRAINSONNET_E2E_JOBSET=1 "${go_test[@]}" -p 1 -parallel 64 "${node_suites[@]}"
}
if [ -s "$logs/.image.end" ]; then
  if finish image; then start_node; else log "the node's image was not built: the node suites do not run"; fi
fi

# The control plane's suites on a cluster of their own, beside the node's.
cp_state="${TRAINSONNET_STATE:-/tmp/trainsonnet-cluster}-kwok"
start "control plane" "${low[@]}" env TS_NAME=control-plane WITH_KWOK=1 WITH_KUEUE=1 WITH_JOBSET=1 WITH_NODE=0 \
  TRAINSONNET_STATE="$cp_state" \
  TRAINSONNET_ETCD_PORT="${TRAINSONNET_KWOK_ETCD_PORT:-22379}" \
  TRAINSONNET_ETCD_PEER_PORT="${TRAINSONNET_KWOK_ETCD_PEER_PORT:-22380}" \
  TRAINSONNET_API_PORT="${TRAINSONNET_KWOK_API_PORT:-26443}" \
  TRAINSONNET_KUEUE_WEBHOOK_PORT="${TRAINSONNET_KWOK_KUEUE_WEBHOOK_PORT:-29443}" \
  TRAINSONNET_KUEUE_HEALTH_PORT="${TRAINSONNET_KWOK_KUEUE_HEALTH_PORT:-28081}" \
  TRAINSONNET_JOBSET_WEBHOOK_PORT="${TRAINSONNET_KWOK_JOBSET_WEBHOOK_PORT:-29444}" \
  TRAINSONNET_JOBSET_HEALTH_PORT="${TRAINSONNET_KWOK_JOBSET_HEALTH_PORT:-28082}" \
  "$cluster/with-cluster.sh" \
  env TRAINSONNET_E2E=1 TRAINSONNET_E2E_KWOK=1 TRAINSONNET_E2E_KUEUE=1 TRAINSONNET_E2E_JOBSET=1 "${go_test[@]}" "${cluster_suites[@]}"
start scripts "${low[@]}" env TRAINSONNET_E2E=1 "${go_test[@]}" "${host_suites[@]}"
if [ "$with_check" = 1 ]; then start check "${low[@]}" make check; fi

# Each step's log as it ends; the node's suites once the image is there.
while :; do
  pids=()
  for name in "${steps[@]}"; do
    if [ -n "${step_pid[$name]:-}" ]; then pids+=("${step_pid[$name]}"); fi
  done
  [ "${#pids[@]}" -gt 0 ] || break
  ended=""
  wait -n -p ended "${pids[@]}" || true
  [ -n "$ended" ] || continue # a trapped signal: wait again
  for name in "${steps[@]}"; do
    [ "${step_pid[$name]:-}" = "$ended" ] || continue
    if finish "$name"; then
      if [ "$name" = image ]; then start_node; fi
    elif [ "$name" = image ]; then
      log "the node's image was not built: the node suites do not run"
    fi
    break
  done
done

summary
exit "$rc"

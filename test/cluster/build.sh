#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Build the pinned control-plane binaries once and cache them outside the
# repository, keyed by version (see versions.sh). A binary that is present is
# never rebuilt; change a version to get a rebuild.
#
#   test/cluster/build.sh [TARGET...]
#
# TARGET (default: all, or $TRAINSONNET_BUILD_TARGETS):
#   k8s            kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet
#                  kube-proxy
#                  (one `go build` through a generated wrapper module)
#   etcd           etcd server (wrapper module around go.etcd.io/etcd/server/v3)
#   kwok           kwok (go install sigs.k8s.io/kwok/cmd/kwok@version)
#   kueue          Kueue (go install sigs.k8s.io/kueue/cmd/kueue@version) and
#                  the manifests up.sh installs it with (CRDs, RBAC, webhooks)
#   jobset         JobSet (go install sigs.k8s.io/jobset@version) and the
#                  manifests up.sh installs it with (CRD, RBAC, webhooks)
#   operators      the Kubeflow training operator and mpi-operator, with their
#                  CRDs and upstream examples (test/operators/record.sh; not in all)
#   control-plane  k8s + etcd
#   all            k8s + etcd + kwok + kueue + jobset: everything the e2e suite needs
#
# Cache layout (TRAINSONNET_CACHE, default /var/cache/trainsonnet):
#   k8s-<ver>/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kubelet,kube-proxy}
#   etcd-<ver>/etcd
#   kwok-<ver>/kwok
#   kueue-<ver>/{kueue,crds.yaml,role.yaml,webhooks.yaml}  (role.yaml: the
#                             manager's ClusterRole and its Role of Secrets)
#   jobset-<ver>/{jobset,crds.yaml,role.yaml,webhooks.yaml}
#   training-operator-<ver>/{training-operator,crds.yaml,examples/}
#   mpi-operator-<ver>/{mpi-operator,crds.yaml,examples/}
#   build/{k8s,etcd,mpi-operator}-<ver>/   wrapper modules and build logs
#
# GOCACHE and GOMODCACHE are left at whatever `go env` says: keep them at a
# fixed path between runs, or the "warm" rebuild recompiles everything
# (compile action IDs include the module source directory).
set -euo pipefail
TS_NAME=build
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Every build here is of a wrapper module under the cache: never let a
# go.work (the repository's, or $GOWORK) take it over. Only the builds:
# the commands with-cluster.sh runs keep the workspace.
export GOWORK=off

export CGO_ENABLED=0

usage() { sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; }

# ------------------------------------------------------------------ targets
if [ "$#" -eq 0 ]; then
  read -r -a args <<<"${TRAINSONNET_BUILD_TARGETS:-all}"
else
  args=("$@")
fi
want_k8s=0 want_etcd=0 want_kwok=0 want_kueue=0 want_jobset=0 want_operators=0
for t in "${args[@]}"; do
  case "$t" in
    all) want_k8s=1 want_etcd=1 want_kwok=1 want_kueue=1 want_jobset=1 ;;
    control-plane) want_k8s=1 want_etcd=1 ;;
    k8s | kubernetes) want_k8s=1 ;;
    etcd) want_etcd=1 ;;
    kwok) want_kwok=1 ;;
    kueue) want_kueue=1 ;;
    jobset) want_jobset=1 ;;
    operators) want_operators=1 ;;
    -h | --help) usage; exit 0 ;;
    *) usage; ts_die "unknown target '$t'" ;;
  esac
done

command -v go >/dev/null || ts_die "go is not on PATH"
command -v flock >/dev/null || ts_die "flock (util-linux) is not on PATH"
mkdir -p "$TS_CACHE" "$TS_BUILD_ROOT"

# ----------------------------------------------------------------- helpers
# One build of a target at a time per cache: CI jobs, a colleague's harness
# or test/e2e.sh's steps may call build.sh concurrently; the second build
# of a target waits, then finds it present, while other targets build side
# by side (kwok beside a running node's suites).
locked() { # locked TARGET CMD...
  local lock="$TS_CACHE/.build-$1.lock"
  shift
  (
    trap cleanup EXIT
    if ! flock -n 9; then
      ts_log "another build holds $lock; waiting"
      flock 9
    fi
    "$@"
  ) 9>"$lock"
}

# Temporary output dirs of this run; removed on any exit. Binaries are built
# there and renamed into place only after they ran, so an interrupted build
# never leaves a half-written file that would later count as "present".
tmp_dirs=()
cleanup() { local d; for d in "${tmp_dirs[@]}"; do rm -rf "$d"; done; }
trap cleanup EXIT

# new_tmp DIR: sets $tmp to a fresh temp dir inside DIR (same file system,
# so the final mv is an atomic rename). Leftovers of interrupted runs are
# removed first; safe because we hold the target's build lock.
new_tmp() {
  mkdir -p "$1"
  rm -rf "$1"/.tmp-build.*
  tmp="$(mktemp -d "$1/.tmp-build.XXXXXX")"
  tmp_dirs+=("$tmp")
}

# logged LOG CMD...: runs CMD with its output appended to LOG; on failure
# shows the end of LOG and exits.
logged() {
  local log="$1"; shift
  printf '+ %s\n' "$*" >>"$log"
  if ! "$@" >>"$log" 2>&1; then
    tail -n 40 "$log" >&2
    ts_die "failed: $* (full log: $log)"
  fi
}

# check_version BIN WANT ARGS...: runs BIN ARGS and requires WANT in its output.
check_version() {
  local bin="$1" want="$2" out; shift 2
  out="$("$bin" "$@" 2>&1)" || ts_die "$bin $* failed: $out"
  case "$out" in
    *"$want"*) ;;
    *) ts_die "$bin reports '$out', expected $want" ;;
  esac
}


# --------------------------------------------------------------- kubernetes
build_k8s() {
  local v="$TRAINSONNET_K8S_VERSION" c missing=() pkgs=()
  for c in "${TS_K8S_COMPONENTS[@]}"; do
    [ -x "$TS_K8S_BIN/$c" ] || missing+=("$c")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    ts_log "k8s $v: present in $TS_K8S_BIN (skip)"
    return 0
  fi
  local t0 work log tmp upstream_mod ld p major minor
  t0="$(date +%s.%N)"
  work="$TS_BUILD_ROOT/k8s-$v"
  log="$work/build.log"
  mkdir -p "$work"
  : >"$log"
  ts_log "k8s $v: building ${missing[*]} (log: $log)"

  # k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces every
  # staging module (k8s.io/api, ...) with ./staging/src/... . The wrapper
  # module requires it and points each staging module at its published tag.
  # The list of staging modules is the replace block of the upstream .mod
  # file (only that file is fetched here, not the source zip).
  upstream_mod="$(cd "$work" && go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$v" 2>>"$log")" ||
    { tail -n 20 "$log" >&2; ts_die "cannot resolve k8s.io/kubernetes@$v"; }
  [ -s "$upstream_mod" ] || ts_die "no go.mod for k8s.io/kubernetes@$v at '$upstream_mod'"
  {
    printf 'module trainsonnet.local/k8s-binaries\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes %s\n\n' "$v"
    awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// { print $1 }' "$upstream_mod" | sort -u |
      while read -r m; do printf 'replace %s => %s %s\n' "$m" "$m" "$TRAINSONNET_K8S_STAGING_VERSION"; done
  } >"$work/go.mod.new"
  grep -q '^replace k8s.io/api ' "$work/go.mod.new" ||
    ts_die "found no staging modules in $upstream_mod"
  mv -f "$work/go.mod.new" "$work/go.mod"

  for c in "${TS_K8S_COMPONENTS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  ts_log "k8s $v: resolving modules"
  (cd "$work" && logged "$log" go get "${pkgs[@]/%/@$v}")

  # Stamp the version the way release builds do; without it the binaries say
  # v0.0.0-master+$Format:%H$ and kubectl warns about version skew.
  major="${v#v}"; major="${major%%.*}"      # v1.34.3 -> 1
  minor="${v#v*.}"; minor="${minor%%.*}"    # v1.34.3 -> 34
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  pkgs=()
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  new_tmp "$TS_K8S_BIN"
  ts_log "k8s $v: compiling ${missing[*]} in one go build (cold: 6-15 min on 2 cores)"
  (cd "$work" && logged "$log" go build -ldflags "$ld" -o "$tmp/" "${pkgs[@]}")
  for c in "${missing[@]}"; do
    if [ "$c" = kubectl ]; then
      check_version "$tmp/$c" "$v" version --client
    else
      check_version "$tmp/$c" "Kubernetes $v" --version
    fi
  done
  for c in "${missing[@]}"; do mv -f "$tmp/$c" "$TS_K8S_BIN/$c"; done
  ts_log "k8s $v: built ${missing[*]} in $(ts_since "$t0")"
}

# --------------------------------------------------------------------- etcd
build_etcd() {
  local v="$TRAINSONNET_ETCD_VERSION"
  if [ -x "$TS_ETCD_BIN/etcd" ]; then
    ts_log "etcd $v: present in $TS_ETCD_BIN (skip)"
    return 0
  fi
  local t0 work log tmp
  t0="$(date +%s.%N)"
  work="$TS_BUILD_ROOT/etcd-$v"
  log="$work/build.log"
  mkdir -p "$work"
  : >"$log"
  ts_log "etcd $v: building (log: $log)"
  # go.etcd.io/etcd/server/v3 is the etcd main package, but its go.mod has
  # replace directives, so `go install ...@version` refuses it: wrap it.
  printf 'module trainsonnet.local/etcd-binary\n\ngo 1.24.0\n' >"$work/go.mod.new"
  mv -f "$work/go.mod.new" "$work/go.mod"
  (cd "$work" && logged "$log" go get "go.etcd.io/etcd/server/v3@$v")
  new_tmp "$TS_ETCD_BIN"
  (cd "$work" && logged "$log" go build -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
  check_version "$tmp/etcd" "etcd Version: ${v#v}" --version
  mv -f "$tmp/etcd" "$TS_ETCD_BIN/etcd"
  ts_log "etcd $v: built in $(ts_since "$t0")"
}

# --------------------------------------------------------------------- kwok
build_kwok() {
  local v="$TRAINSONNET_KWOK_VERSION"
  if [ -x "$TS_KWOK_BIN/kwok" ]; then
    ts_log "kwok $v: present in $TS_KWOK_BIN (skip)"
    return 0
  fi
  local t0 log tmp
  t0="$(date +%s.%N)"
  mkdir -p "$TS_BUILD_ROOT"
  log="$TS_BUILD_ROOT/kwok-$v.log"
  : >"$log"
  ts_log "kwok $v: building (log: $log)"
  new_tmp "$TS_KWOK_BIN"
  # No replace directives in kwok's go.mod, so plain `go install` works.
  # Run from the build root so no enclosing module is consulted.
  (cd "$TS_BUILD_ROOT" && GOBIN="$tmp" logged "$log" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$v")
  check_version "$tmp/kwok" "kwok version $v" --version
  mv -f "$tmp/kwok" "$TS_KWOK_BIN/kwok"
  ts_log "kwok $v: built in $(ts_since "$t0")"
}

# -------------------------------------------------------------------- kueue
# The binary, and what up.sh installs it with, from the same module: the
# CRDs, the manager's ClusterRole and the webhook configurations (their
# clientConfig and selectors are up.sh's business).
build_kueue() {
  local v="$TRAINSONNET_KUEUE_VERSION" f
  local files=(kueue crds.yaml role.yaml webhooks.yaml)
  local present=1
  for f in "${files[@]}"; do [ -s "$TS_KUEUE_DIR/$f" ] || present=0; done
  if [ "$present" = 1 ]; then
    ts_log "kueue $v: present in $TS_KUEUE_DIR (skip)"
    return 0
  fi
  local t0 log tmp mod
  t0="$(date +%s.%N)"
  mkdir -p "$TS_BUILD_ROOT"
  log="$TS_BUILD_ROOT/kueue-$v.log"
  : >"$log"
  ts_log "kueue $v: building (log: $log; cold: about 10 min on 2 cores)"
  new_tmp "$TS_KUEUE_DIR"
  # No replace directives in Kueue's go.mod: plain `go install` works.
  (cd "$TS_BUILD_ROOT" && GOBIN="$tmp" logged "$log" go install -ldflags "-s -w" "sigs.k8s.io/kueue/cmd/kueue@$v")
  "$tmp/kueue" --help >/dev/null 2>&1 || ts_die "$tmp/kueue --help failed"
  mod="$(cd "$TS_BUILD_ROOT" && go mod download -json "sigs.k8s.io/kueue@$v" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$mod/config/components" ] || ts_die "no config/components in the module sigs.k8s.io/kueue@$v ('$mod')"
  for f in "$mod"/config/components/crd/bases/*.yaml; do printf -- '---\n'; cat "$f"; done >"$tmp/crds.yaml"
  # the manager's ClusterRole, and its Role of Secrets in its namespace
  {
    cat "$mod/config/components/rbac/role.yaml"
    printf -- '---\n'
    cat "$mod/config/components/rbac/manager_secrets_role.yaml"
  } >"$tmp/role.yaml"
  cp "$mod/config/components/webhook/manifests.yaml" "$tmp/webhooks.yaml"
  for f in "${files[@]}"; do mv -f "$tmp/$f" "$TS_KUEUE_DIR/$f"; done
  ts_log "kueue $v: built in $(ts_since "$t0")"
}

# ------------------------------------------------------------------- jobset
# The binary (the module's root package, main.go) and what up.sh installs
# it with, from the same module: the CRD, the manager's ClusterRole and the
# webhook configurations (their clientConfig and selectors are up.sh's).
build_jobset() {
  local v="$TRAINSONNET_JOBSET_VERSION" f
  local files=(jobset crds.yaml role.yaml webhooks.yaml)
  local present=1
  for f in "${files[@]}"; do [ -s "$TS_JOBSET_DIR/$f" ] || present=0; done
  if [ "$present" = 1 ]; then
    ts_log "jobset $v: present in $TS_JOBSET_DIR (skip)"
    return 0
  fi
  local t0 log work tmp mod
  t0="$(date +%s.%N)"
  work="$TS_BUILD_ROOT/jobset-$v"
  log="$TS_BUILD_ROOT/jobset-$v.log"
  mkdir -p "$work"
  : >"$log"
  ts_log "jobset $v: building (log: $log)"
  # In a wrapper module: `go install sigs.k8s.io/jobset@v` asks the proxy
  # for the module's version list, which it refuses (403).
  wrapped jobset sigs.k8s.io/jobset "$v" sigs.k8s.io/jobset "$TS_JOBSET_DIR" 1.26.0 "$work" "$log"
  "$tmp/jobset" --help >/dev/null 2>&1 || ts_die "$tmp/jobset --help failed"
  [ -d "$mod/config/components" ] || ts_die "no config/components in the module sigs.k8s.io/jobset@$v ('$mod')"
  for f in "$mod"/config/components/crd/bases/*.yaml; do printf -- '---\n'; cat "$f"; done >"$tmp/crds.yaml"
  cp "$mod/config/components/rbac/role.yaml" "$tmp/role.yaml"
  cp "$mod/config/components/webhook/manifests.yaml" "$tmp/webhooks.yaml"
  for f in "${files[@]}"; do mv -f "$tmp/$f" "$TS_JOBSET_DIR/$f"; done
  ts_log "jobset $v: built in $(ts_since "$t0")"
}

# ---------------------------------------------------------------- operators
# The Kubeflow operators, as the reference of what their users' jobs ran
# (test/operators). Each is built through a wrapper module: the proxy refuses
# their version lists, which `go install pkg@version` asks for (deprecation),
# while it serves the modules by exact version. Beside each binary: its CRDs
# and the upstream examples the recordings are of.
mod_dir() { (cd "$1" && go list -m -json "$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'); }

# wrapped NAME MODULE VERSION PKG DIR GO_LINE WORK LOG: builds PKG of
# MODULE@VERSION into $tmp/NAME (a new temporary directory of DIR) through
# a wrapper module in WORK that requires it, and sets mod to the module's
# source directory (its manifests, examples). What the proxy serves only
# by exact version needs this: `go install MODULE@VERSION` asks for the
# module's version list first.
wrapped() {
  local name="$1" module="$2" v="$3" pkg="$4" dir="$5" go_line="$6" work="$7" log="$8"
  printf 'module trainsonnet.local/%s-build\n\ngo %s\n\nrequire %s %s\n' "$name" "$go_line" "$module" "$v" >"$work/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >"$work/tools.go"
  new_tmp "$dir"
  (cd "$work" && GOFLAGS=-mod=mod logged "$log" go mod tidy)
  (cd "$work" && GOFLAGS=-mod=mod logged "$log" go build -ldflags "-s -w" -o "$tmp/$name" "$pkg")
  mod="$(mod_dir "$work" "$module")"
}

build_operator() {
  local name="$1" module="$2" v="$3" pkg="$4" dir="$5" go_line="$6"; shift 6
  if [ -x "$dir/$name" ] && [ -s "$dir/crds.yaml" ] && [ -d "$dir/examples" ]; then
    ts_log "$name $v: present in $dir (skip)"
    return 0
  fi
  local t0 log tmp work mod f
  t0="$(date +%s.%N)"
  work="$TS_BUILD_ROOT/$name-$v"
  log="$TS_BUILD_ROOT/$name-$v.log"
  mkdir -p "$work"
  : >"$log"
  ts_log "$name $v: building (log: $log; cold: about 5 min on 2 cores)"
  wrapped "$name" "$module" "$v" "$pkg" "$dir" "$go_line" "$work" "$log"
  [ -d "$mod" ] || ts_die "no module directory for $module@$v ('$mod')"
  for f in "$@"; do
    [ -s "$mod/$f" ] || ts_die "no $f in $module@$v"
    printf -- '---\n'; cat "$mod/$f"
  done >"$tmp/crds.yaml"
  mkdir -p "$tmp/examples"
  case "$name" in
    training-operator) cp -R "$mod/examples/pytorch" "$mod/examples/tensorflow" "$tmp/examples/" ;;
    mpi-operator) cp -R "$mod/examples/v2beta1/." "$tmp/examples/" ;;
    trainer)
      # its YAML examples, and beside them what the recorder installs: the
      # stock runtimes (torchtune's need a claim and a model download: not
      # recorded), the webhook configurations and the manager's role
      cp -R "$mod/examples/yaml" "$tmp/examples/"
      mkdir -p "$tmp/examples/.install"
      for f in "$mod"/manifests/base/runtimes/*.yaml; do
        [ "$(basename "$f")" = kustomization.yaml ] || { printf -- '---\n'; cat "$f"; }
      done >"$tmp/examples/.install/runtimes.yaml"
      cp "$mod/manifests/base/webhook/manifests.yaml" "$tmp/examples/.install/webhooks.yaml"
      ;;
  esac
  chmod -R u+w "$tmp/examples"
  rm -rf "$dir/examples"
  mv -f "$tmp/examples" "$dir/examples"
  mv -f "$tmp/crds.yaml" "$dir/crds.yaml"
  mv -f "$tmp/$name" "$dir/$name"
  ts_log "$name $v: built in $(ts_since "$t0")"
}

build_operators() {
  build_operator training-operator github.com/kubeflow/training-operator "$TRAINSONNET_TRAINING_OPERATOR_VERSION" \
    github.com/kubeflow/training-operator/cmd/training-operator.v1 "$TS_TRAINING_OPERATOR_DIR" 1.23 \
    manifests/base/crds/kubeflow.org_pytorchjobs.yaml manifests/base/crds/kubeflow.org_tfjobs.yaml
  build_operator mpi-operator github.com/kubeflow/mpi-operator "$TRAINSONNET_MPI_OPERATOR_VERSION" \
    github.com/kubeflow/mpi-operator/cmd/mpi-operator "$TS_MPI_OPERATOR_DIR" 1.25.0 \
    manifests/base/kubeflow.org_mpijobs.yaml
  build_operator trainer github.com/kubeflow/trainer/v2 "$TRAINSONNET_TRAINER_VERSION" \
    github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager "$TS_TRAINER_DIR" 1.26.0 \
    manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml \
    manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml \
    manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml
}

if [ "$want_etcd" = 1 ]; then locked etcd build_etcd; fi
if [ "$want_k8s" = 1 ]; then locked k8s build_k8s; fi
if [ "$want_kueue" = 1 ]; then locked kueue build_kueue; fi
if [ "$want_jobset" = 1 ]; then locked jobset build_jobset; fi
if [ "$want_kwok" = 1 ]; then locked kwok build_kwok; fi
if [ "$want_operators" = 1 ]; then locked operators build_operators; fi
ts_log "done in $(ts_since "$TS_T0")"

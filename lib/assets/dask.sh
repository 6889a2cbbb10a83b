#!/bin/sh
# trainsonnet: the pods of a horovod-dask cluster, and the helpers of its
# scheduler pod.
#
#   sh dask.sh worker|launcher      the pod's setup, then mpi.sh worker|launcher
#   sh dask.sh run CMD [ARG...]     the pod's setup, then CMD (a Dask worker)
#   sh dask.sh ui NAME CMD [ARG...] the pod's setup, then CMD (a UI: Jupyter,
#                                   TensorBoard), started again whenever it
#                                   ends, after 5 s doubling to 300 s (back to
#                                   5 s after a run of 5 minutes); only a
#                                   signal ends it, with 0: a UI that fails
#                                   never fails its container
#   goto N [CMD...]                 ssh to rank N of the ring: worker N
#   update CMD...                   run CMD on every host of the ring at once
#   update                          bring the git checkout of the current
#                                   directory up to date, here and at the same
#                                   path on every host of the ring:
#                                   $UPDATE_REPO_COMMAND, or git fetch --all &&
#                                   git reset --hard @{upstream} (the chart's
#                                   update: fetch, reset to origin, pull)
#
# goto and update are this file too, mounted on the scheduler's PATH under
# those names (the kolotoc chart defined them in its .bashrc; its update
# ran git pull everywhere). The ring is the hostfile: one worker per line,
# rank order.
#
# The pod's setup, for the main container and the Dask workers alike:
#   TS_CUDA_STUBS   a directory of CUDA stub libraries, put first on
#                   LD_LIBRARY_PATH when the node has no GPU driver
#                   (TS_GPU_DRIVER_FILE [/proc/driver/nvidia/version]), so
#                   that CUDA builds of the frameworks load there
#   TS_PROJECT      a conda environment to activate when conda has it (the
#                   chart's source activate <projectName>)
#   TS_SETUP        a command run with sh -c before the worker serves ssh
#                   (the chart's worker.args); its failure fails the pod
# A worker then starts its Dask workers beside sshd, in the same container
# (so that they see its GPUs and count against its limits), and starts
# each again whenever it exits (the scheduler restarted, say): for i in 0 to
# TS_DASK_NWORKERS-1,
#   dask worker $TS_DASK_SCHEDULER --nworkers 1
#     --nthreads $TS_DASK_NTHREADS --memory-limit $TS_DASK_MEMORY
#     --resources "$TS_DASK_RESOURCES" --name <host name>-<i>
# (--name <host name> when TS_DASK_NWORKERS is 1: the names of --nworkers).
# They end with the container, when mpi.sh (its first process) exits.
# mpi.sh passes LD_LIBRARY_PATH, PATH and CONDA_* on to the ssh sessions
# when TS_SSH_ENV names them.
#
# Environment (defaults in brackets): TS_CONFIG_DIR [/etc/trainsonnet],
# TS_HOSTFILE [$TS_CONFIG_DIR/hostfile], TS_PARALLEL [64] (update's ssh
# calls at once). Exit codes: 2 for bad usage; goto: ssh's; update: 0 when
# CMD succeeded on every host, 1 otherwise.

TS_CONFIG_DIR=${TS_CONFIG_DIR:-/etc/trainsonnet}
TS_HOSTFILE=${TS_HOSTFILE:-$TS_CONFIG_DIR/hostfile}
SSH_CONFIG=$TS_CONFIG_DIR/ssh_config

say() { printf 'trainsonnet: %s\n' "$*" >&2; }
usage_error() {
    say "$1"
    say "usage: goto N [CMD...] | update [CMD...] | sh dask.sh worker|launcher|run CMD...|ui NAME CMD..."
    exit 2
}

# ring: the hosts of the ring, in rank order.
ring() { awk 'NF && $1 !~ /^#/ { print $1 }' "$TS_HOSTFILE"; }

setup() {
    if [ -n "${TS_CUDA_STUBS:-}" ] && [ ! -e "${TS_GPU_DRIVER_FILE:-/proc/driver/nvidia/version}" ]; then
        if [ -d "$TS_CUDA_STUBS" ]; then
            LD_LIBRARY_PATH=$TS_CUDA_STUBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
            export LD_LIBRARY_PATH
            say "no GPU driver on this node: CUDA stubs from $TS_CUDA_STUBS"
        else
            say "warning: no GPU driver on this node, and the CUDA stubs directory $TS_CUDA_STUBS does not exist"
        fi
    fi
    if [ -n "${TS_PROJECT:-}" ] && command -v conda >/dev/null 2>&1; then
        _st_base=$(conda info --base 2>/dev/null) || _st_base=''
        if [ -n "$_st_base" ] && [ -d "$_st_base/envs/$TS_PROJECT/bin" ]; then
            PATH=$_st_base/envs/$TS_PROJECT/bin:$PATH
            CONDA_PREFIX=$_st_base/envs/$TS_PROJECT
            CONDA_DEFAULT_ENV=$TS_PROJECT
            export PATH CONDA_PREFIX CONDA_DEFAULT_ENV
            say "conda environment $TS_PROJECT active"
        else
            say "note: conda has no environment $TS_PROJECT; using the image's"
        fi
    fi
}

# start_dask_workers: TS_DASK_NWORKERS Dask workers, each a process of its
# own with a restart loop of its own, in the background. One command with
# --nworkers N would not do: when one of its N processes closes for good
# (its scheduler gone), the command runs on and nothing starts it again.
start_dask_workers() {
    [ -n "${TS_DASK_SCHEDULER:-}" ] || return 0
    command -v dask >/dev/null 2>&1 || {
        say "dask not found in PATH: install Dask's distributed in the image; this worker serves ssh only"
        return 0
    }
    _d_host=$(uname -n)
    _d_n=${TS_DASK_NWORKERS:-1}
    case $_d_n in '' | *[!0-9]*) _d_n=1 ;; esac
    _d_i=0
    while [ "$_d_i" -lt "$_d_n" ]; do
        # the names dask worker --nworkers N --name HOST gives its processes
        if [ "$_d_n" -eq 1 ]; then dask_worker_loop "$_d_host" & else dask_worker_loop "$_d_host-$_d_i" & fi
        _d_i=$((_d_i + 1))
    done
    say "Dask workers started against $TS_DASK_SCHEDULER ($_d_n processes)"
}

# dask_worker_loop NAME: the Dask worker NAME, started again whenever it ends.
dask_worker_loop() {
    while :; do
        dask worker "$TS_DASK_SCHEDULER" --nworkers 1 \
            --nthreads "${TS_DASK_NTHREADS:-1}" --memory-limit "${TS_DASK_MEMORY:-auto}" \
            ${TS_DASK_RESOURCES:+--resources "$TS_DASK_RESOURCES"} --name "$1" </dev/null
        say "the Dask worker $1 exited with code $?; starting it again in 5s"
        sleep 5
    done
}

# ui NAME CMD...: CMD, started again whenever it ends (see the top).
cmd_ui() {
    [ $# -ge 2 ] || usage_error "ui: what name and command?"
    _ui_name=$1
    shift
    setup
    _ui_pid=''
    trap '[ -z "$_ui_pid" ] || { kill -TERM "$_ui_pid" 2>/dev/null; wait "$_ui_pid"; }; exit 0' TERM INT
    _ui_wait=5
    while :; do
        _ui_start=$(date +%s)
        "$@" </dev/null &
        _ui_pid=$!
        wait "$_ui_pid"
        _ui_rc=$?
        _ui_pid=''
        [ $(($(date +%s) - _ui_start)) -lt 300 ] || _ui_wait=5
        say "$_ui_name exited with code $_ui_rc; starting it again in ${_ui_wait}s (the cluster goes on without it)"
        sleep "$_ui_wait" &
        wait $!
        _ui_wait=$((_ui_wait * 2))
        [ "$_ui_wait" -le 300 ] || _ui_wait=300
    done
}

cmd_goto() {
    [ $# -ge 1 ] || usage_error "goto: which rank? (0 to $(($(ring | wc -l) - 1)))"
    case $1 in
    '' | *[!0-9]*) usage_error "goto: rank '$1' is not a number" ;;
    esac
    _g_host=$(ring | awk -v r="$1" 'NR == r + 1 { print; exit }')
    [ -n "$_g_host" ] || usage_error "goto: no rank $1: the ring has ranks 0 to $(($(ring | wc -l) - 1))"
    shift
    if [ $# -eq 0 ]; then
        exec ssh -F "$SSH_CONFIG" -t "$_g_host"
    fi
    exec ssh -F "$SSH_CONFIG" "$_g_host" "$@"
}

# shquote WORD: WORD quoted for sh.
shquote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# update: with no CMD, the chart's own use: the checkout of the current
# directory brought up to date here, then at the same path everywhere.
update_repo() {
    _ur_cmd=${UPDATE_REPO_COMMAND:-'git fetch --all && git reset --hard @{upstream}'}
    _ur_dir=$(pwd)
    say "update: $_ur_cmd (in $_ur_dir, here and on every worker)"
    sh -c "$_ur_cmd"
    _ur_rc=$?
    [ "$_ur_rc" = 0 ] || say "update: $(uname -n): exit code $_ur_rc"
    set -- "cd $(shquote "$_ur_dir") && { $_ur_cmd; }"
    cmd_update "$@" || exit 1
    exit "$_ur_rc"
}

# update CMD...: CMD on every host, TS_PARALLEL at a time; each line of
# output prefixed with its host, and a line per host that failed.
cmd_update() {
    [ $# -ge 1 ] || update_repo
    _u_dir=$(mktemp -d) || exit 1
    trap 'rm -rf "$_u_dir"' EXIT
    _u_max=${TS_PARALLEL:-64}
    _u_n=0
    for _u_host in $(ring); do
        (
            ssh -n -F "$SSH_CONFIG" "$_u_host" "$*" 2>&1
            echo "$?" >"$_u_dir/$_u_host"
        ) | sed "s|^|$_u_host: |" &
        _u_n=$((_u_n + 1))
        if [ "$_u_n" -ge "$_u_max" ]; then
            wait
            _u_n=0
        fi
    done
    wait
    _u_failed=0
    for _u_host in $(ring); do
        _u_rc=$(cat "$_u_dir/$_u_host" 2>/dev/null) || _u_rc=255
        if [ "$_u_rc" != 0 ]; then
            say "update: $_u_host: exit code $_u_rc"
            _u_failed=$((_u_failed + 1))
        fi
    done
    if [ "$_u_failed" -gt 0 ]; then
        say "update: failed on $_u_failed of $(ring | wc -l) hosts"
        exit 1
    fi
}

set -f
case ${0##*/} in
goto) cmd_goto "$@" ;;
update)
    cmd_update "$@"
    exit 0
    ;;
esac
case ${1:-} in
worker)
    setup
    if [ -n "${TS_SETUP:-}" ]; then
        say "running worker.args: $TS_SETUP"
        sh -c "$TS_SETUP" || {
            _w_rc=$?
            say "worker.args exited with code $_w_rc"
            exit "$_w_rc"
        }
    fi
    start_dask_workers
    exec sh "$TS_CONFIG_DIR/mpi.sh" worker
    ;;
launcher)
    setup
    exec sh "$TS_CONFIG_DIR/mpi.sh" launcher
    ;;
run)
    shift
    [ $# -ge 1 ] || usage_error "run: what command?"
    setup
    exec "$@"
    ;;
ui)
    shift
    cmd_ui "$@"
    ;;
goto)
    shift
    cmd_goto "$@"
    ;;
update)
    shift
    cmd_update "$@"
    ;;
*) usage_error "unknown subcommand '${1:-}'" ;;
esac

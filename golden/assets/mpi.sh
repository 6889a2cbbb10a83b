#!/bin/sh
# trainsonnet: the runtime script of every pod of an MPI/Horovod job.
#
#   sh /etc/trainsonnet/mpi.sh launcher|worker|s3-download|s3-upload
#
# One POSIX sh file (dash, busybox sh, bash --posix), embedded in the job's
# ConfigMap. Pods never talk to the Kubernetes API: the launcher learns that
# the workers are up by reaching them over ssh, and workers learn that the job
# is over from a stop file the launcher writes over ssh, or - when the
# launcher died without saying so - from the launcher's DNS name (a headless
# Service of the launcher that publishes ready pods only) disappearing.
#
# Environment common to every subcommand (defaults in brackets):
#   TS_CONFIG_DIR    [/etc/trainsonnet]       read-only: hostfile, mpi.sh
#   TS_HOSTFILE      [$TS_CONFIG_DIR/hostfile] lines "<host> slots=<n>"
#   TS_KEY_DIR       [/etc/trainsonnet-ssh]   ssh-privatekey, ssh-publickey
#   TS_RUN_DIR       [/var/run/trainsonnet]   writable, shared by the pod's
#                                             containers (emptyDir)
#   TS_SSH_PORT      [2022]
#   TS_INIT_TIMEOUT  [300]  seconds: bound of every start-up wait
#   TS_SSH_ENV       names of variables of this pod's environment that ssh
#                    sessions into it get too (the processes mpirun starts
#                    here over ssh); sshd itself passes none
#   TS_POLL_INTERVAL [2]    seconds between checks of the worker/uploader loop
# launcher:    TS_EXEC (sh -c string; empty = stay up until SIGTERM),
#              TS_SELF (optional: this pod's own hostfile entry; it runs sshd),
#              TS_STOP_WORKERS_ON_FAILURE [1; 0 leaves the workers up when
#              TS_EXEC fails, for a retry of the launcher pod]
# worker:      TS_LAUNCHER (required), TS_LAUNCHER_GRACE [60],
#              TS_WAIT_FOR_GPU_DRIVER [0; 1 or true to wait], TS_GPU_DRIVER_FILE
#              [/proc/driver/nvidia/version]
# s3-download: TS_S3_FROM (s3://...), TS_S3_TO (absolute path), TS_S3_ENDPOINT
# s3-upload:   TS_S3_FROM (local path), TS_S3_TO (s3://...), TS_NAMESPACE,
#              TS_JOB_NAME, TS_POD_NAME, TS_S3_ENDPOINT, TS_LAUNCHER (optional
#              here), TS_LAUNCHER_GRACE [60]
#
# Exit codes: 0 done; 1 runtime failure (sshd, ssh setup, nothing to upload);
# 2 usage or configuration error; 124 a start-up wait ran out of time;
# 127 a needed program is missing; 128+n a signal (143 SIGTERM, 130 SIGINT);
# the launcher otherwise exits with TS_EXEC's code, the S3 commands with aws's.
#
# Style notes: no `local` (not POSIX), so each function prefixes its own
# variables with a short tag; integer `sleep` only; no arrays.

# ---------------------------------------------------------------- basics

PROG=trainsonnet
# Seconds one launcher ssh probe may take at most, even with time to spare:
# a hung worker must not use up the whole budget of the others.
PROBE_MAX=10
# Seconds one "please stop" ssh call may take.
STOP_MAX=10

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }

# die CODE MESSAGE...
die() {
    _die_code=$1
    shift
    log "$*"
    exit "$_die_code"
}

now() { date +%s; }

usage() {
    cat <<'EOF'
usage: sh mpi.sh <subcommand>
  launcher     wait for the workers over ssh, run TS_EXEC, then stop the workers
  worker       serve ssh until the launcher says stop or goes away
  s3-download  copy TS_S3_FROM (s3://) to TS_S3_TO (local) with the aws CLI
  s3-upload    after the worker finished, copy TS_S3_FROM to
               TS_S3_TO/TS_NAMESPACE/TS_JOB_NAME/TS_POD_NAME
Configuration is read from TS_* environment variables (see the script header).
EOF
}

# require VAR...: exits 2 naming the first variable that is unset or empty.
require() {
    for _rq_var in "$@"; do
        eval "_rq_val=\${$_rq_var:-}"
        [ -n "$_rq_val" ] || die 2 "missing required environment variable $_rq_var"
    done
}

# require_seconds VAR MIN: the variable must be a whole number >= MIN.
require_seconds() {
    _rs_val=
    eval "_rs_val=\${$1:-}"
    case $_rs_val in
    '' | *[!0-9]*) die 2 "$1 must be a whole number, got '$_rs_val'" ;;
    0?*) die 2 "$1 must be written without leading zeros, got '$_rs_val'" ;;
    esac
    [ "$_rs_val" -ge "$2" ] || die 2 "$1 must be at least $2, got $_rs_val"
}

# nap SECS: sleep in the background and wait for it, so that a trapped signal
# is handled at once instead of after the sleep (sh runs traps only between
# commands, but `wait` returns as soon as a trapped signal arrives).
nap() {
    sleep "$1" >/dev/null 2>&1 &
    NAP_PID=$!
    wait "$NAP_PID"
    NAP_PID=
}

# kill_after PID SECS: the fallback for a missing timeout(1). Kills PID when
# it is still alive after SECS seconds; returns as soon as PID is gone.
kill_after() {
    _ka_left=$2
    while [ "$_ka_left" -gt 0 ]; do
        sleep 1
        kill -0 "$1" 2>/dev/null || return 0
        _ka_left=$((_ka_left - 1))
    done
    kill -TERM "$1" 2>/dev/null || return 0
    sleep 1
    kill -KILL "$1" 2>/dev/null
}

# run_bounded SECS CMD...: runs CMD (a program, not a function: timeout(1)
# executes it) for at most SECS seconds and returns its status (non-zero
# when it was killed). CMD runs in the background so that a signal to this
# script is handled at once; BOUNDED_PID lets the handlers kill it.
run_bounded() {
    _rb_secs=$1
    shift
    [ -n "$HAVE_TIMEOUT" ] || detect_timeout
    if [ "$HAVE_TIMEOUT" = 1 ]; then
        timeout "$_rb_secs" "$@" &
        BOUNDED_PID=$!
        wait "$BOUNDED_PID"
        _rb_rc=$?
    else
        "$@" &
        BOUNDED_PID=$!
        kill_after "$BOUNDED_PID" "$_rb_secs" >/dev/null 2>&1 &
        _rb_killer=$!
        wait "$BOUNDED_PID"
        _rb_rc=$?
        kill "$_rb_killer" 2>/dev/null
        wait "$_rb_killer" 2>/dev/null
    fi
    BOUNDED_PID=
    return "$_rb_rc"
}

# A timeout(1) that takes "timeout SECS CMD" (coreutils, busybox >= 1.30);
# old busybox wants "-t SECS", which this probe rejects.
detect_timeout() {
    HAVE_TIMEOUT=0
    if command -v timeout >/dev/null 2>&1 && timeout 5 sleep 0 >/dev/null 2>&1; then
        HAVE_TIMEOUT=1
    fi
}

# Settings shared by every subcommand, checked once.
load_common_config() {
    TS_CONFIG_DIR=${TS_CONFIG_DIR:-/etc/trainsonnet}
    TS_HOSTFILE=${TS_HOSTFILE:-$TS_CONFIG_DIR/hostfile}
    TS_KEY_DIR=${TS_KEY_DIR:-/etc/trainsonnet-ssh}
    TS_RUN_DIR=${TS_RUN_DIR:-/var/run/trainsonnet}
    TS_SSH_PORT=${TS_SSH_PORT:-2022}
    TS_INIT_TIMEOUT=${TS_INIT_TIMEOUT:-300}
    TS_POLL_INTERVAL=${TS_POLL_INTERVAL:-2}
    TS_LAUNCHER_GRACE=${TS_LAUNCHER_GRACE:-60}
    require_seconds TS_SSH_PORT 1
    require_seconds TS_INIT_TIMEOUT 1
    require_seconds TS_POLL_INTERVAL 1
    require_seconds TS_LAUNCHER_GRACE 0
    # The run dir ends up unquoted in ssh/sshd configs, in the remote stop
    # command and in OMPI_MCA_plm_rsh_args; keep it to characters that are
    # safe in all of them.
    case $TS_RUN_DIR in
    /*) ;;
    *) die 2 "TS_RUN_DIR must be an absolute path, got '$TS_RUN_DIR'" ;;
    esac
    case $TS_RUN_DIR in
    *[!A-Za-z0-9/._-]*) die 2 "TS_RUN_DIR may only contain letters, digits and / . _ -, got '$TS_RUN_DIR'" ;;
    esac
    SSH_DIR=$TS_RUN_DIR/ssh
    SSH_CONFIG=$SSH_DIR/config
    # Let TS_EXEC and users' shells find them.
    export TS_HOSTFILE TS_RUN_DIR
}

# --------------------------------------------------------------- hostfile

# other_hosts: the host names of the hostfile, one a line, without blank
# lines, comments, duplicates and this pod's own entry ($TS_SELF).
other_hosts() {
    _oh_seen=' '
    while read -r _oh_host _oh_rest || [ -n "$_oh_host" ]; do
        case $_oh_host in
        '' | '#'*) continue ;;
        esac
        [ "$_oh_host" = "${TS_SELF:-}" ] && continue
        case $_oh_seen in
        *" $_oh_host "*) continue ;;
        esac
        _oh_seen="$_oh_seen$_oh_host "
        printf '%s\n' "$_oh_host"
    done <"$TS_HOSTFILE"
}

# hostfile_has HOST: whether HOST is an entry of the hostfile.
hostfile_has() {
    while read -r _hh_host _hh_rest || [ -n "$_hh_host" ]; do
        [ "$_hh_host" = "$1" ] && return 0
    done <"$TS_HOSTFILE"
    return 1
}

# ------------------------------------------------------------------- ssh

# ssh_setup: private key, authorized_keys and client config in $SSH_DIR,
# all 0600 in a 0700 directory (the Secret's files may be 0440 with an
# fsGroup or root-owned; ssh insists on a private key only its user reads).
ssh_setup() {
    # ssh and sshd look the user up by uid; a runAsUser without a passwd
    # entry in the image can never log in, so say so instead of letting ssh
    # fail obscurely later.
    USER_NAME=$(id -un 2>/dev/null) ||
        die 1 "uid $(id -u) has no entry in /etc/passwd; ssh needs one (add the user to the image)"
    for _ss_f in ssh-privatekey ssh-publickey; do
        [ -r "$TS_KEY_DIR/$_ss_f" ] ||
            die 2 "ssh key $TS_KEY_DIR/$_ss_f not found or not readable (TS_KEY_DIR)"
    done
    # $(...) drops the final newline, printf puts one back: OpenSSH rejects
    # a private key whose last line has none.
    _ss_priv=$(cat "$TS_KEY_DIR/ssh-privatekey") || die 1 "cannot read $TS_KEY_DIR/ssh-privatekey"
    _ss_pub=$(cat "$TS_KEY_DIR/ssh-publickey") || die 1 "cannot read $TS_KEY_DIR/ssh-publickey"
    mkdir -p "$SSH_DIR" || die 1 "cannot create $SSH_DIR (TS_RUN_DIR must be writable)"
    # Replaced, not written through: copies left by an earlier run of the
    # container in the same pod may be read-only.
    rm -f "$SSH_DIR/id" "$SSH_DIR/id.pub" "$SSH_DIR/authorized_keys" "$SSH_CONFIG"
    (
        umask 077
        chmod 700 "$SSH_DIR" &&
            printf '%s\n' "$_ss_priv" >"$SSH_DIR/id" &&
            printf '%s\n' "$_ss_pub" >"$SSH_DIR/id.pub" &&
            printf '%s\n' "$_ss_pub" >"$SSH_DIR/authorized_keys" &&
            write_ssh_config >"$SSH_CONFIG"
    ) || die 1 "cannot write the ssh files in $SSH_DIR"
    link_home_ssh_config
}

write_ssh_config() {
    cat <<EOF
# Written by trainsonnet mpi.sh. Used by mpirun through
# OMPI_MCA_plm_rsh_args=-F $SSH_CONFIG and by ~/.ssh/config when possible.
Host *
    Port $TS_SSH_PORT
    IdentityFile $SSH_DIR/id
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    BatchMode yes
    ConnectTimeout 5
EOF
}

# link_home_ssh_config: best effort, so that a user's own "ssh host" works;
# HOME is often read-only or "/" under a random runAsUser, and that is fine.
link_home_ssh_config() {
    _lh_dir=${HOME%/}/.ssh
    if [ -z "${HOME:-}" ] || [ ! -d "$HOME" ] || [ -e "$_lh_dir/config" ]; then
        return 0
    fi
    if (umask 077 && mkdir -p "$_lh_dir" &&
        printf 'Include %s\n' "$SSH_CONFIG" >"$_lh_dir/config") 2>/dev/null; then
        return 0
    fi
    log "note: could not write $_lh_dir/config; use 'ssh -F $SSH_CONFIG' for manual ssh"
}

# find_sshd: an absolute path (sshd refuses to re-exec itself otherwise).
find_sshd() {
    SSHD=$(command -v sshd 2>/dev/null)
    case $SSHD in
    /*) ;;
    *) SSHD=/usr/sbin/sshd ;;
    esac
    [ -x "$SSHD" ] || die 127 "sshd not found in PATH or /usr/sbin (install openssh-server in the image)"
    command -v ssh-keygen >/dev/null 2>&1 ||
        die 127 "ssh-keygen not found in PATH (install openssh-client in the image)"
}

# write_session: when TS_SSH_ENV names variables, the script every ssh
# session into this pod runs (sshd's ForceCommand): it exports those
# variables with this pod's values, then runs the client's command, or a
# login shell, with the user's shell. sshd gives sessions a fresh
# environment, and ~/.ssh/environment needs a writable home. A variable
# that is unset here stays unset.
write_session() {
    SESSION=
    [ -n "${TS_SSH_ENV:-}" ] || return 0
    SESSION=$SSH_DIR/session
    (umask 077 && session_script >"$SESSION") || die 1 "cannot write $SESSION"
}

session_script() {
    printf '# Written by trainsonnet mpi.sh: the ssh sessions of this pod.\n'
    for _sv_name in $TS_SSH_ENV; do
        case $_sv_name in
        [!A-Za-z_]* | *[!A-Za-z0-9_]*)
            # Kubernetes allows - and . in env names; sh cannot export them.
            log "note: ssh sessions do not get $_sv_name: not a shell variable name"
            continue
            ;;
        esac
        eval "_sv_set=\${$_sv_name+x}"
        [ -n "$_sv_set" ] || continue
        _sv_val=
        eval "_sv_val=\$$_sv_name"
        printf "export %s='%s'\n" "$_sv_name" "$(printf '%s' "$_sv_val" | sed "s/'/'\\\\''/g")"
    done
    # An sftp request (scp uses sftp) arrives as the Subsystem's command,
    # internal-sftp, which only sshd itself can run: hand it to the
    # sftp-server program instead.
    # shellcheck disable=SC2016 # expanded by the session, not here
    printf '%s\n' 'if [ "${SSH_ORIGINAL_COMMAND:-}" = internal-sftp ]; then' \
        '    for s in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server /usr/lib/ssh/sftp-server /usr/libexec/sftp-server; do' \
        '        [ -x "$s" ] && exec "$s"' \
        '    done' \
        '    echo "trainsonnet: no sftp-server in this image; use scp -O" >&2' \
        '    exit 1' \
        'fi' \
        'if [ -n "${SSH_ORIGINAL_COMMAND:-}" ]; then' \
        '    exec "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"' \
        'fi' \
        'exec "${SHELL:-/bin/sh}" -l'
}

# write_sshd_config: modern options only (no Protocol, no RSA1/DSA keys, no
# UsePrivilegeSeparation). StrictModes is off because Secret and emptyDir
# volumes have modes (group-readable, 1777) that it refuses.
write_sshd_config() {
    cat >"$SSH_DIR/sshd_config" <<EOF || die 1 "cannot write $SSH_DIR/sshd_config"
# Written by trainsonnet mpi.sh.
Port $TS_SSH_PORT
HostKey $SSH_DIR/ssh_host_ed25519_key
AuthorizedKeysFile $SSH_DIR/authorized_keys
PidFile $SSH_DIR/sshd.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PrintMotd no
Subsystem sftp internal-sftp
EOF
    if [ -n "$SESSION" ]; then
        printf 'ForceCommand sh %s\n' "$SESSION" >>"$SSH_DIR/sshd_config" ||
            die 1 "cannot write $SSH_DIR/sshd_config"
    fi
}

# check_sshd_config: `sshd -t`. As root, sshd needs its privilege separation
# directory (/run/sshd on Debian/Ubuntu), which a fresh container may lack:
# create whatever sshd names and try once more. Non-root sshd needs none.
check_sshd_config() {
    _cs_err=$SSH_DIR/sshd-t.err
    "$SSHD" -t -f "$SSH_DIR/sshd_config" >"$_cs_err" 2>&1 && return 0
    # OpenSSH ends its stderr lines with \r\n: take the path up to a blank.
    _cs_dir=$(sed -n 's/.*Missing privilege separation directory: *\([^[:space:]]*\).*/\1/p' "$_cs_err")
    if [ -n "$_cs_dir" ] && mkdir -p "$_cs_dir" 2>/dev/null && chmod 755 "$_cs_dir"; then
        "$SSHD" -t -f "$SSH_DIR/sshd_config" >"$_cs_err" 2>&1 && return 0
    fi
    log "sshd rejected $SSH_DIR/sshd_config:"
    cat "$_cs_err" >&2
    exit 1
}

# start_sshd: a fresh ed25519 host key per pod, then sshd in the foreground
# (-D, logging to our stderr with -e) as a child of this script.
start_sshd() {
    find_sshd
    rm -f "$SSH_DIR/ssh_host_ed25519_key" "$SSH_DIR/ssh_host_ed25519_key.pub"
    ssh-keygen -q -t ed25519 -N '' -C "trainsonnet-host-key" \
        -f "$SSH_DIR/ssh_host_ed25519_key" </dev/null >/dev/null ||
        die 1 "ssh-keygen could not create a host key in $SSH_DIR"
    write_session
    write_sshd_config
    check_sshd_config
    "$SSHD" -D -e -f "$SSH_DIR/sshd_config" </dev/null &
    SSHD_PID=$!
    log "sshd (pid $SSHD_PID) serving ssh on port $TS_SSH_PORT as user $USER_NAME"
}

# stop_sshd: idempotent. A SIGTERM that reaches the child between fork and
# exec is lost (the shell's own handler is still in place there), so it is
# repeated every second, then SIGKILL.
stop_sshd() {
    [ -n "$SSHD_PID" ] || return 0
    kill -TERM "$SSHD_PID" 2>/dev/null
    repeat_term "$SSHD_PID" 3 >/dev/null 2>&1 &
    _sp_repeater=$!
    wait "$SSHD_PID" 2>/dev/null
    kill "$_sp_repeater" 2>/dev/null
    SSHD_PID=
}

# repeat_term PID TIMES: SIGTERM to PID every second while it lives, then
# SIGKILL.
repeat_term() {
    _rt_left=$2
    while [ "$_rt_left" -gt 0 ]; do
        sleep 1
        kill -TERM "$1" 2>/dev/null || return 0
        _rt_left=$((_rt_left - 1))
    done
    kill -KILL "$1" 2>/dev/null
}

# sshd_alive: relies on the shell reaping its exited children, which dash,
# busybox sh and bash do while waiting for any command.
sshd_alive() { kill -0 "$SSHD_PID" 2>/dev/null; }

# ---------------------------------------------------------------- launcher

# wait_for_workers HOSTS...: returns once every host answers `ssh host true`;
# exits 124 when TS_INIT_TIMEOUT seconds have passed, naming those that never
# did. Every attempt is bounded by the time left, so a hanging ssh cannot
# stretch the wait.
wait_for_workers() {
    _ww_total=$#
    if [ "$_ww_total" -eq 0 ]; then
        log "no other hosts in $TS_HOSTFILE; nothing to wait for"
        return 0
    fi
    _ww_start=$(now)
    _ww_deadline=$((_ww_start + TS_INIT_TIMEOUT))
    _ww_noun=workers
    [ "$_ww_total" -eq 1 ] && _ww_noun=worker
    log "waiting up to ${TS_INIT_TIMEOUT}s for $_ww_total $_ww_noun to answer over ssh on port $TS_SSH_PORT: $*"
    _ww_pending=$*
    _ww_answered=
    while :; do
        _ww_still=
        for _ww_host in $_ww_pending; do
            _ww_left=$((_ww_deadline - $(now)))
            if [ "$_ww_left" -gt 0 ]; then
                [ "$_ww_left" -gt "$PROBE_MAX" ] && _ww_left=$PROBE_MAX
                # -n: without it ssh reads our stdin, which in a `while read`
                # loop would be the rest of the host list.
                if run_bounded "$_ww_left" ssh -n -F "$SSH_CONFIG" "$_ww_host" true >/dev/null 2>&1; then
                    log "$_ww_host answered after $(($(now) - _ww_start))s"
                    _ww_answered="$_ww_answered $_ww_host"
                    continue
                fi
            fi
            _ww_still="$_ww_still $_ww_host"
        done
        _ww_pending=${_ww_still# }
        if [ -z "$_ww_pending" ]; then
            log "all $_ww_total $_ww_noun reachable after $(($(now) - _ww_start))s"
            return 0
        fi
        if [ "$(now)" -ge "$_ww_deadline" ]; then
            log "gave up after ${TS_INIT_TIMEOUT}s waiting for workers; not reachable over ssh on port $TS_SSH_PORT: $_ww_pending"
            # The job has failed: let the workers that did answer end now
            # rather than when they notice the launcher is gone.
            # shellcheck disable=SC2086 # host names have no blanks
            [ "${TS_STOP_WORKERS_ON_FAILURE:-1}" = 0 ] || stop_workers $_ww_answered
            exit 124
        fi
        nap 1
    done
}

# stop_workers HOSTS...: creates $TS_RUN_DIR/stop on every host, in
# parallel, each try bounded; failures are fine (a worker may be gone).
stop_workers() {
    [ "$#" -eq 0 ] && return 0
    log "telling $# worker(s) to stop: $*"
    _sw_pids=
    for _sw_host in "$@"; do
        run_bounded "$STOP_MAX" ssh -n -F "$SSH_CONFIG" "$_sw_host" "touch '$TS_RUN_DIR/stop'" >/dev/null 2>&1 &
        _sw_pids="$_sw_pids $!"
    done
    # Not a bare `wait`: that would also wait for our own sshd.
    for _sw_pid in $_sw_pids; do
        wait "$_sw_pid"
    done
}

# The launcher's signal handler. Before and after TS_EXEC, a signal ends the
# launcher (143/130); in interactive mode SIGTERM is the normal end (0).
# While TS_EXEC runs, the signal is passed on as SIGTERM - background
# commands of a non-interactive sh start with SIGINT ignored, so forwarding
# SIGINT itself could be lost - and the main flow collects TS_EXEC's end.
launcher_signal() {
    case $1 in
    INT) _ls_code=130 ;;
    *) _ls_code=143 ;;
    esac
    GOT_SIGNAL=$_ls_code
    case $PHASE in
    running)
        log "received SIG$1; passing SIGTERM on to TS_EXEC (pid $EXEC_PID)"
        kill -TERM "$EXEC_PID" 2>/dev/null
        ;;
    interactive)
        log "received SIG$1; interactive launcher exits"
        exit 0
        ;;
    *)
        log "received SIG$1 while starting up; exiting"
        exit "$_ls_code"
        ;;
    esac
}

launcher_cleanup() {
    [ -n "$EXEC_PID" ] && kill -TERM "$EXEC_PID" 2>/dev/null
    [ -n "$BOUNDED_PID" ] && kill -TERM "$BOUNDED_PID" 2>/dev/null
    [ -n "$NAP_PID" ] && kill -TERM "$NAP_PID" 2>/dev/null
    stop_sshd
}

# run_exec: TS_EXEC as a child; returns its exit code.
run_exec() {
    log "running TS_EXEC: $TS_EXEC"
    sh -c "$TS_EXEC" &
    EXEC_PID=$!
    PHASE=running
    while :; do
        wait "$EXEC_PID"
        _re_rc=$?
        # A status above 128 may only mean that `wait` was interrupted by a
        # signal for us; then TS_EXEC is still running.
        if [ "$_re_rc" -gt 128 ] && kill -0 "$EXEC_PID" 2>/dev/null; then
            continue
        fi
        break
    done
    PHASE=finishing
    EXEC_PID=
    return "$_re_rc"
}

cmd_launcher() {
    load_common_config
    PHASE=starting
    GOT_SIGNAL=
    EXEC_PID=
    TS_EXEC=${TS_EXEC:-}
    trap launcher_cleanup EXIT
    trap 'launcher_signal TERM' TERM
    trap 'launcher_signal INT' INT
    [ -r "$TS_HOSTFILE" ] || die 2 "hostfile $TS_HOSTFILE not found or not readable (TS_HOSTFILE)"
    if [ -n "${TS_SELF:-}" ] && ! hostfile_has "$TS_SELF"; then
        log "warning: TS_SELF=$TS_SELF is not an entry of $TS_HOSTFILE"
    fi
    # shellcheck disable=SC2046 # host names have no blanks: split on purpose
    set -- $(other_hosts)
    ssh_setup
    [ -n "${TS_SELF:-}" ] && start_sshd
    wait_for_workers "$@"
    if [ -z "$TS_EXEC" ]; then
        log "TS_EXEC is empty: interactive mode, staying up until SIGTERM (kubectl exec into this pod)"
        PHASE=interactive
        while :; do nap 3600; done
    fi
    run_exec
    _cl_rc=$?
    if [ -n "$GOT_SIGNAL" ]; then
        # The pod is being deleted or disrupted: the workers will notice the
        # launcher going away by themselves.
        log "TS_EXEC ended with code $_cl_rc after a signal; exiting $GOT_SIGNAL without stopping the workers"
        exit "$GOT_SIGNAL"
    fi
    log "TS_EXEC exited with code $_cl_rc"
    if [ "$_cl_rc" -ne 0 ] && [ "${TS_STOP_WORKERS_ON_FAILURE:-1}" = 0 ]; then
        # The Job may retry the launcher (backoffLimit > 0): leave the
        # workers up for the next attempt. Once the launcher is gone for
        # good, they stop by themselves after TS_LAUNCHER_GRACE.
        log "leaving the workers up for a retry of the launcher (TS_STOP_WORKERS_ON_FAILURE=0)"
        exit "$_cl_rc"
    fi
    stop_workers "$@"
    exit "$_cl_rc"
}

# ------------------------------------------------------------------ worker

# wait_for_gpu_driver: the device plugin may start the container before the
# driver is loaded.
wait_for_gpu_driver() {
    _wg_file=${TS_GPU_DRIVER_FILE:-/proc/driver/nvidia/version}
    [ -e "$_wg_file" ] && return 0
    log "waiting up to ${TS_INIT_TIMEOUT}s for the GPU driver ($_wg_file)"
    _wg_deadline=$(($(now) + TS_INIT_TIMEOUT))
    while [ ! -e "$_wg_file" ]; do
        [ "$(now)" -lt "$_wg_deadline" ] ||
            die 124 "gave up after ${TS_INIT_TIMEOUT}s waiting for the GPU driver: $_wg_file does not exist"
        nap 1
    done
    log "GPU driver ready"
}

# The launcher watchdog, for workers and the uploader. The launcher's name
# resolves through its headless Service as long as its container runs.
# watchdog_init; then watchdog_check every tick, which sets WATCHDOG to
# "ok", "never" (not resolved within TS_INIT_TIMEOUT) or "gone" (resolved
# once, then not for TS_LAUNCHER_GRACE seconds in a row).
watchdog_init() {
    WATCHDOG=ok
    WD_ENABLED=1
    WD_SEEN=
    WD_START=$(now)
    if [ -z "${TS_LAUNCHER:-}" ]; then
        WD_ENABLED=0
    elif ! command -v getent >/dev/null 2>&1; then
        log "warning: getent not found; launcher watchdog disabled, only the stop file ends this container"
        WD_ENABLED=0
    else
        log "launcher watchdog: $TS_LAUNCHER must resolve within ${TS_INIT_TIMEOUT}s; once it has not resolved for ${TS_LAUNCHER_GRACE}s the job counts as ended"
    fi
}

watchdog_check() {
    [ "$WD_ENABLED" = 1 ] || return 0
    _wc_now=$(now)
    # Bounded: a slow DNS server must not stall the stop-file checks.
    if run_bounded 10 getent hosts "$TS_LAUNCHER" >/dev/null 2>&1; then
        [ -n "$WD_SEEN" ] || log "launcher $TS_LAUNCHER resolves"
        WD_SEEN=$_wc_now
        WATCHDOG=ok
    elif [ -z "$WD_SEEN" ]; then
        [ $((_wc_now - WD_START)) -lt "$TS_INIT_TIMEOUT" ] || WATCHDOG=never
    elif [ $((_wc_now - WD_SEEN)) -ge "$TS_LAUNCHER_GRACE" ]; then
        WATCHDOG=gone
    fi
}

worker_signal() {
    log "received SIG$1; stopping sshd"
    exit "$2"
}

# On every exit: stop sshd and leave $TS_RUN_DIR/finished for the uploader.
worker_cleanup() {
    [ -n "$BOUNDED_PID" ] && kill -TERM "$BOUNDED_PID" 2>/dev/null
    [ -n "$NAP_PID" ] && kill -TERM "$NAP_PID" 2>/dev/null
    stop_sshd
    touch "$TS_RUN_DIR/finished" 2>/dev/null ||
        log "warning: cannot create $TS_RUN_DIR/finished"
}

cmd_worker() {
    # Installed first: even a configuration error leaves "finished" behind,
    # so that the uploader does not wait in vain.
    TS_RUN_DIR=${TS_RUN_DIR:-/var/run/trainsonnet}
    trap worker_cleanup EXIT
    load_common_config
    trap 'worker_signal TERM 143' TERM
    trap 'worker_signal INT 130' INT
    require TS_LAUNCHER
    case ${TS_WAIT_FOR_GPU_DRIVER:-0} in
    1 | true) wait_for_gpu_driver ;;
    esac
    watchdog_init
    ssh_setup
    start_sshd
    # A stop file left by an earlier run of this container in the same pod
    # means that the job is over: exiting at once is right.
    while :; do
        if [ -e "$TS_RUN_DIR/stop" ]; then
            log "the launcher asked us to stop; exiting"
            exit 0
        fi
        sshd_alive || die 1 "sshd (pid $SSHD_PID) exited unexpectedly; see its messages above"
        watchdog_check
        case $WATCHDOG in
        never) die 124 "gave up after ${TS_INIT_TIMEOUT}s waiting for the launcher: $TS_LAUNCHER never resolved" ;;
        gone)
            log "launcher $TS_LAUNCHER has not resolved for ${TS_LAUNCHER_GRACE}s; assuming the job ended"
            exit 0
            ;;
        esac
        nap "$TS_POLL_INTERVAL"
    done
}

# --------------------------------------------------------------------- S3

need_aws() {
    command -v aws >/dev/null 2>&1 || die 127 "aws CLI not found in PATH (use an aws-cli image)"
}

# aws_cp FROM TO: aws s3 cp --recursive, with TS_S3_ENDPOINT if set.
aws_cp() {
    set -- s3 cp --recursive "$1" "$2"
    [ -n "${TS_S3_ENDPOINT:-}" ] && set -- --endpoint-url "$TS_S3_ENDPOINT" "$@"
    aws "$@"
}

cmd_s3_download() {
    require TS_S3_FROM TS_S3_TO
    case $TS_S3_FROM in s3://*) ;; *) die 2 "TS_S3_FROM must be an s3:// URI, got '$TS_S3_FROM'" ;; esac
    case $TS_S3_TO in /*) ;; *) die 2 "TS_S3_TO must be an absolute path, got '$TS_S3_TO'" ;; esac
    need_aws
    log "downloading $TS_S3_FROM to $TS_S3_TO"
    aws_cp "$TS_S3_FROM" "$TS_S3_TO"
    _sd_rc=$?
    [ "$_sd_rc" -eq 0 ] || die "$_sd_rc" "download of $TS_S3_FROM to $TS_S3_TO failed (aws exit code $_sd_rc)"
    log "downloaded $TS_S3_FROM to $TS_S3_TO"
}

cmd_s3_upload() {
    load_common_config
    require TS_S3_FROM TS_S3_TO TS_NAMESPACE TS_JOB_NAME TS_POD_NAME
    case $TS_S3_TO in s3://*) ;; *) die 2 "TS_S3_TO must be an s3:// URI, got '$TS_S3_TO'" ;; esac
    need_aws
    trap 'cleanup_bounded; log "received SIGTERM before uploading; exiting"; exit 143' TERM
    trap 'cleanup_bounded; log "received SIGINT before uploading; exiting"; exit 130' INT
    _su_dest=${TS_S3_TO%/}/$TS_NAMESPACE/$TS_JOB_NAME/$TS_POD_NAME
    watchdog_init
    [ -n "${TS_LAUNCHER:-}" ] ||
        log "note: TS_LAUNCHER not set; waiting for $TS_RUN_DIR/finished only"
    log "waiting for the worker to finish ($TS_RUN_DIR/finished) before uploading"
    while [ ! -e "$TS_RUN_DIR/finished" ]; do
        watchdog_check
        case $WATCHDOG in
        never)
            log "launcher $TS_LAUNCHER never resolved within ${TS_INIT_TIMEOUT}s; uploading what there is"
            break
            ;;
        gone)
            log "launcher $TS_LAUNCHER has not resolved for ${TS_LAUNCHER_GRACE}s; uploading what there is"
            break
            ;;
        esac
        nap "$TS_POLL_INTERVAL"
    done
    trap - TERM INT
    [ -e "$TS_S3_FROM" ] || die 1 "nothing to upload: $TS_S3_FROM does not exist"
    log "uploading $TS_S3_FROM to $_su_dest"
    aws_cp "$TS_S3_FROM" "$_su_dest"
    _su_rc=$?
    [ "$_su_rc" -eq 0 ] || die "$_su_rc" "upload of $TS_S3_FROM to $_su_dest failed (aws exit code $_su_rc)"
    log "uploaded $TS_S3_FROM to $_su_dest"
}

cleanup_bounded() {
    [ -n "$BOUNDED_PID" ] && kill -TERM "$BOUNDED_PID" 2>/dev/null
    [ -n "$NAP_PID" ] && kill -TERM "$NAP_PID" 2>/dev/null
    return 0
}

# ------------------------------------------------------------------- main

# Set before any trap can look at them.
BOUNDED_PID=
NAP_PID=
SSHD_PID=
HAVE_TIMEOUT= # set by the first run_bounded

main() {
    # No pathname expansion anywhere: host lists are split on blanks on
    # purpose and must never be globbed. (TS_EXEC runs in its own sh.)
    set -f
    case ${1:-} in
    launcher) cmd_launcher ;;
    worker) cmd_worker ;;
    s3-download) cmd_s3_download ;;
    s3-upload) cmd_s3_upload ;;
    -h | --help | help) usage ;;
    '')
        log "missing subcommand"
        usage >&2
        exit 2
        ;;
    *)
        log "unknown subcommand '$1'"
        usage >&2
        exit 2
        ;;
    esac
}

main "$@"

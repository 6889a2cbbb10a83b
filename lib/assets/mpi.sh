#!/bin/sh
# trainsonnet: a launcher that reaches its workers over ssh (mpirun,
# deepspeed's pdsh, a script of one's own), and the workers serving ssh.
#
#   sh /etc/trainsonnet/mpi.sh launcher|worker|indexed|wait
#   (indexed: index 0 of an Indexed Job launches, the others work; wait: the
#   launcher up to TS_EXEC, in the init container of one that runs its image's ENTRYPOINT.)
#
# Built on runtime.sh (logging, bounded waits, the DNS watchdog, the end
# port, signals, exit codes), in the job's ConfigMap beside the hostfile
# and the ssh configuration trainsonnet rendered (ssh_config, sshd_config:
# port, options, paths). Nothing talks to the Kubernetes API. The launcher
# waits until every worker accepts connections on its ssh port (one sweep
# a round) and one ssh login works, runs TS_EXEC, then says on its stop
# port (runtime.sh's end port) that the job is over; every worker reads it
# there. A launcher that cannot open the port (no python3, no sshd) writes
# a stop file into each worker over ssh instead. A worker also stops once
# the launcher's DNS name (a Service that publishes ready pods only) has
# been gone for TS_LAUNCHER_GRACE. What exists only at run time is made in
# $TS_RUN_DIR/ssh (0700): key copies only this user may read, the pod's
# host key and, with TS_SSH_ENV, the sessions' script.
#
# Environment [default]:
#   TS_CONFIG_DIR [/etc/trainsonnet]   the files above, read-only
#   TS_HOSTFILE   [$TS_CONFIG_DIR/hostfile]  lines "<host> slots=<n>"
#   TS_KEY_DIR    [/etc/trainsonnet-ssh]  ssh-privatekey and ssh-publickey,
#                 or Kubeflow's id_rsa, id_rsa.pub (and authorized_keys)
#   TS_RUN_DIR    [/var/run/trainsonnet]  writable, shared by the pod's containers
#   TS_SSH_PORT   [2022]  for messages: the port is in the configs
#   TS_STOP_PORT  [TS_SSH_PORT + 1, or - 1 at 65535; 0: none, the launcher
#                 tells each worker over ssh]
#   TS_SSH_ENV    variables of this pod that ssh sessions into it get too
#                 (sshd itself passes none)
#   TS_INIT_TIMEOUT, TS_POLL_INTERVAL, TS_PARALLEL, TS_TCP_TOOL: runtime.sh's
#   launcher: TS_EXEC (sh -c; empty: stay up until SIGTERM), TS_SELF (its
#     own hostfile entry: it serves ssh too), TS_END_ON_FAILURE [1]
#   both: TS_END_BY=job: the Job controller ends the job, not the end port;
#     a worker watches TS_LAUNCHER only to learn that it is cut off (69)
#   worker: TS_LAUNCHER (required), TS_LAUNCHER_GRACE [60; 0: no watchdog],
#     TS_WAIT_FOR_GPU_DRIVER [0], TS_GPU_DRIVER_FILE [/proc/driver/nvidia/version]
#
# Exit codes: runtime.sh's (1 also: sshd or the ssh setup failed); the
# launcher otherwise exits with TS_EXEC's code.

# shellcheck source-path=SCRIPTDIR source=runtime.sh
. "${TS_CONFIG_DIR:-/etc/trainsonnet}/runtime.sh"

# Seconds one "please stop" ssh call may take, and its second try. ssh's
# handshake takes 0.3 s into an idle pod, but was measured at up to 5 s
# on a node busy starting pods, and stop calls bounded at 10 s have failed
# there (the worker then waits out TS_LAUNCHER_GRACE). Healthy calls end
# long before either bound.
STOP_MAX=20
STOP_MAX_AGAIN=40

usage() {
    cat <<'EOF'
usage: sh mpi.sh <subcommand>
  launcher     wait for the workers, run TS_EXEC, then tell the workers it is over
  worker       serve ssh until the launcher says the job is over or goes away
  wait         the launcher's ssh setup and wait for the workers, then exit 0
Configuration is read from TS_* environment variables (see the script header).
EOF
}

load_config() {
    TS_HOSTFILE=${TS_HOSTFILE:-$TS_CONFIG_DIR/hostfile}
    TS_KEY_DIR=${TS_KEY_DIR:-/etc/trainsonnet-ssh}
    TS_RUN_DIR=${TS_RUN_DIR:-/var/run/trainsonnet}
    TS_SSH_PORT=${TS_SSH_PORT:-2022}
    TS_LAUNCHER_GRACE=${TS_LAUNCHER_GRACE:-60}
    runtime_config
    seconds TS_LAUNCHER_GRACE
    case $TS_SSH_PORT in
    '' | *[!0-9]*) die 2 "TS_SSH_PORT must be a port number, got '$TS_SSH_PORT'" ;;
    esac
    STOP_PORT=${TS_STOP_PORT-}
    if [ -z "$STOP_PORT" ]; then
        STOP_PORT=$((TS_SSH_PORT + 1))
        [ "$STOP_PORT" -le 65535 ] || STOP_PORT=$((TS_SSH_PORT - 1))
    fi
    case $STOP_PORT in
    '' | *[!0-9]*) die 2 "TS_STOP_PORT must be a port number (0: none), got '$STOP_PORT'" ;;
    esac
    [ "$STOP_PORT" -le 65535 ] || die 2 "TS_STOP_PORT must be a port number (0: none), got '$STOP_PORT'"
    [ "$STOP_PORT" != "$TS_SSH_PORT" ] || die 2 "TS_STOP_PORT must not be the ssh port, $TS_SSH_PORT"
    [ "${TS_END_BY:-}" != job ] || STOP_PORT=0
    SSH_DIR=$TS_RUN_DIR/ssh
    END_FILE=$SSH_DIR/end-port
    SSH_CONFIG=$TS_CONFIG_DIR/ssh_config
    SSHD_CONFIG=$TS_CONFIG_DIR/sshd_config
    # Let TS_EXEC and users' shells find them.
    export TS_HOSTFILE TS_RUN_DIR
}

# --------------------------------------------------------------- hostfile

# hosts [SELF]: the host names of the hostfile, one a line, without blank
# lines, comments, duplicates and SELF (this pod's own entry).
hosts() {
    awk -v self="${1:-}" '$1 != "" && $1 !~ /^#/ && $1 != self && !seen[$1]++ { print $1 }' "$TS_HOSTFILE"
}

# ------------------------------------------------------------------- ssh

# ssh_setup: private key and authorized_keys in $SSH_DIR, all 0600 in a
# 0700 directory (the Secret's files may be 0440 with an fsGroup or
# root-owned; ssh insists on a private key only its user reads).
ssh_setup() {
    # ssh and sshd look the user up by uid; a runAsUser without a passwd
    # entry in the image can never log in, so say so instead of letting ssh
    # fail obscurely later.
    USER_NAME=$(id -un 2>/dev/null) ||
        die 1 "uid $(id -u) has no entry in /etc/passwd; ssh needs one (add the user to the image)"
    # A Kubeflow-era Secret has id_rsa, id_rsa.pub and authorized_keys.
    _ss_key=ssh-privatekey _ss_pubf=ssh-publickey
    if [ ! -e "$TS_KEY_DIR/ssh-privatekey" ] && [ -e "$TS_KEY_DIR/id_rsa" ]; then
        _ss_key=id_rsa _ss_pubf=id_rsa.pub
    elif [ ! -e "$TS_KEY_DIR/ssh-privatekey" ]; then
        die 2 "no ssh key in $TS_KEY_DIR (TS_KEY_DIR): the Secret needs the keys ssh-privatekey and ssh-publickey, or id_rsa and id_rsa.pub (and optionally authorized_keys)"
    fi
    for _ss_f in "$TS_KEY_DIR/$_ss_key" "$TS_KEY_DIR/$_ss_pubf" "$SSH_CONFIG"; do
        [ -r "$_ss_f" ] || die 2 "$_ss_f not found or not readable (TS_KEY_DIR, TS_CONFIG_DIR)"
    done
    # $(...) drops the final newline, printf puts one back: OpenSSH rejects
    # a private key whose last line has none.
    _ss_priv=$(cat "$TS_KEY_DIR/$_ss_key") || die 1 "cannot read $TS_KEY_DIR/$_ss_key"
    _ss_pub=$(cat "$TS_KEY_DIR/$_ss_pubf") || die 1 "cannot read $TS_KEY_DIR/$_ss_pubf"
    # The Secret's authorized_keys, if any, and the key's own public half.
    _ss_auth=$_ss_pub
    if [ -e "$TS_KEY_DIR/authorized_keys" ]; then
        _ss_auth="$(cat "$TS_KEY_DIR/authorized_keys")
$_ss_pub" || die 1 "cannot read $TS_KEY_DIR/authorized_keys"
    fi
    mkdir -p "$SSH_DIR" || die 1 "cannot create $SSH_DIR (TS_RUN_DIR must be writable)"
    # Replaced, not written through: copies left by an earlier run of the
    # container in the same pod may be read-only.
    rm -f "$SSH_DIR/id" "$SSH_DIR/id.pub" "$SSH_DIR/authorized_keys"
    (
        umask 077
        chmod 700 "$SSH_DIR" &&
            printf '%s\n' "$_ss_priv" >"$SSH_DIR/id" &&
            printf '%s\n' "$_ss_pub" >"$SSH_DIR/id.pub" &&
            printf '%s\n' "$_ss_auth" >"$SSH_DIR/authorized_keys"
    ) || die 1 "cannot write the ssh files in $SSH_DIR"
    link_home_ssh_config
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
    sshd_path || die 127 "sshd not found in PATH or /usr/sbin (install openssh-server in the image)"
    need ssh-keygen "install openssh-client in the image"
}

# sshd_path: sets SSHD; returns 1 when there is none.
sshd_path() {
    SSHD=$(command -v sshd 2>/dev/null)
    case $SSHD in
    /*) ;;
    *) SSHD=/usr/sbin/sshd ;;
    esac
    [ -x "$SSHD" ]
}

# write_session: when TS_SSH_ENV names variables, the script every ssh
# session into this pod runs (sshd's ForceCommand): it exports those
# variables with this pod's values, then runs the client's command, or a
# login shell, with the user's shell. sshd gives sessions a fresh
# environment, and ~/.ssh/environment needs a writable home. A variable
# that is unset here stays unset.
write_session() {
    SESSION=''
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
        _sv_val=''
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

# check_sshd ARGS...: `sshd -t ARGS`, or exit 1 with what sshd said.
check_sshd() {
    test_sshd "$@" && return 0
    log "sshd rejected $SSHD_CONFIG:"
    cat "$SSH_DIR/sshd-t.err" >&2
    exit 1
}

# test_sshd ARGS...: `sshd -t ARGS`; sshd's words in $SSH_DIR/sshd-t.err.
# As root, sshd needs its privilege separation directory (/run/sshd on
# Debian/Ubuntu), which a fresh container may lack: create whatever sshd
# names and try once more. Non-root sshd needs none.
test_sshd() {
    _cs_err=$SSH_DIR/sshd-t.err
    "$SSHD" -t "$@" >"$_cs_err" 2>&1 && return 0
    # OpenSSH ends its stderr lines with \r\n: take the path up to a blank.
    _cs_dir=$(sed -n 's/.*Missing privilege separation directory: *\([^[:space:]]*\).*/\1/p' "$_cs_err")
    if [ -n "$_cs_dir" ] && mkdir -p "$_cs_dir" 2>/dev/null && chmod 755 "$_cs_dir"; then
        "$SSHD" -t "$@" >"$_cs_err" 2>&1 && return 0
    fi
    return 1
}

# host_key: a fresh ed25519 host key of this pod, where sshd_config says.
host_key() {
    rm -f "$SSH_DIR/ssh_host_ed25519_key" "$SSH_DIR/ssh_host_ed25519_key.pub"
    ssh-keygen -q -t ed25519 -N '' -C "trainsonnet-host-key" \
        -f "$SSH_DIR/ssh_host_ed25519_key" </dev/null >/dev/null
}

# start_sshd: a fresh ed25519 host key per pod, then sshd with the rendered
# sshd_config in the foreground (-D, logging to our stderr with -e) as a
# child of this script. The session script, per pod, is an option of its
# command line (which comes before the file's).
start_sshd() {
    find_sshd
    # sshd.pid too: the readiness probe reads it (sshd writes it once it
    # listens); one left by an earlier run of the container would lie.
    rm -f "$SSH_DIR/sshd.pid"
    host_key || die 1 "ssh-keygen could not create a host key in $SSH_DIR"
    write_session
    set -- -f "$SSHD_CONFIG"
    [ -n "$SESSION" ] && set -- "$@" -o "ForceCommand=sh $SESSION"
    check_sshd "$@"
    "$SSHD" -D -e "$@" </dev/null &
    SSHD_PID=$!
    log "sshd (pid $SSHD_PID) serving ssh on port $TS_SSH_PORT as user $USER_NAME"
}

# stop_sshd: idempotent.
stop_sshd() {
    [ -n "$SSHD_PID" ] || return 0
    terminate "$SSHD_PID" 3
    SSHD_PID=''
}

# sshd_alive: relies on the shell reaping its exited children, which dash,
# busybox sh and bash do while waiting for any command.
sshd_alive() { kill -0 "$SSHD_PID" 2>/dev/null; }

# ---------------------------------------------------------------- launcher

probe_ssh() {
    # -n: without it ssh reads our stdin.
    run_bounded "$2" ssh -n -F "$SSH_CONFIG" "$1" true >/dev/null 2>&1
}

probe_port() { tcp_probe "$1:$TS_SSH_PORT" "$2"; }

# wait_for_workers FILE: returns once every host of FILE (one a line)
# accepts connections on the ssh port - tried by one sweep a round
# (runtime.sh's wait_all) - and one of them an ssh login (the key, the
# user and the configs are the same everywhere; a login costs both ends
# far more CPU than a connection), or, without a TCP tool, once every host
# answers `ssh host true`. A worker is up once its sshd listens, which is
# also when its readiness probe passes. Exits 124 when TS_INIT_TIMEOUT
# seconds have passed, naming those that never did; 1 when the login
# fails. Every attempt is bounded by the time left.
wait_for_workers() {
    if [ ! -s "$1" ]; then
        log "no other hosts in $TS_HOSTFILE; nothing to wait for"
        return 0
    fi
    _ww_rc=124
    WAIT_PORT=$TS_SSH_PORT
    if tcp_tool; then
        _ww_probe=sweep
        [ "$TCP_TOOL" = python3 ] || _ww_probe=probe_port
        if wait_all worker "on ssh port $TS_SSH_PORT" "$_ww_probe" "$1"; then
            check_login "$(head -n 1 "$1")" && return 0
            _ww_rc=1
        fi
    elif wait_all worker "over ssh on port $TS_SSH_PORT" probe_ssh "$1"; then
        return 0
    fi
    # The job has failed: let the workers that did answer end now rather
    # than when they notice the launcher is gone.
    SIGNAL_EXIT=$_ww_rc
    ends_on_failure && end_workers "$1.ok"
    exit "$_ww_rc"
}

# check_login HOST: `ssh HOST true`, up to 3 tries a second apart.
check_login() {
    for _cl_try in 1 2 3; do
        _cl_err=$(run_bounded "$PROBE_MAX" ssh -n -F "$SSH_CONFIG" "$1" true 2>&1 >/dev/null) && return 0
        [ "$_cl_try" = 3 ] || nap 1
    done
    log "the workers accept connections on port $TS_SSH_PORT, but ssh $1 true fails: ${_cl_err:-no answer within ${PROBE_MAX}s}"
    return 1
}

# stop_workers FILE: creates $TS_RUN_DIR/stop on every host of FILE,
# TS_PARALLEL at a time, each try bounded; a host whose call failed is
# tried once more (bounded longer), then named in the log with what ssh
# said on each try (a worker may be gone; it then stops by itself once
# the launcher is).
stop_workers() {
    [ -s "$1" ] || return 0
    log "telling $(wc -l <"$1") worker(s) to stop, $TS_PARALLEL at a time"
    STOP_BOUND=$STOP_MAX STOP_ERR=$1.err1
    lanes "$TS_PARALLEL" tell_stop "$1" "$1.stop1"
    awk '$1 != 0 { print $2 }' "$1.stop1" >"$1.again"
    [ -s "$1.again" ] || return 0
    STOP_BOUND=$STOP_MAX_AGAIN STOP_ERR=$1.err2
    lanes "$TS_PARALLEL" tell_stop "$1.again" "$1.stop"
    # why(try, host): the last line ssh wrote on that try, or its bound.
    awk -v p="$PROG" -v e="$1.err" -v b1="$STOP_MAX" -v b2="$STOP_MAX_AGAIN" -v first="$1.stop1" '
        function why(try, host, code,    f, l, w) {
            f = e try "." host
            while ((getline l <f) > 0) if (l != "") w = l
            close(f)
            if (code == 124) w = "no answer within " (try == 1 ? b1 : b2) "s"
            return w == "" ? "ssh exit code " code : "ssh exit code " code ": " w
        }
        FILENAME == first { code1[$2] = $1; next }
        $1 == 0 { print p ": told " $2 " to stop on a second try (first try: " why(1, $2, code1[$2]) ")"; next }
        { print p ": could not tell " $2 " to stop (" why(2, $2, $1) "; first try: " why(1, $2, code1[$2]) "); it stops once the launcher is gone" }
    ' "$1.stop1" "$1.stop" >&2
}

# tell_stop HOST: one `ssh HOST touch stop`, bounded by STOP_BOUND; what
# ssh says goes to $STOP_ERR.HOST.
tell_stop() {
    run_bounded "$STOP_BOUND" ssh -n -F "$SSH_CONFIG" "$1" "touch '$TS_RUN_DIR/stop'" >/dev/null 2>"$STOP_ERR.$1"
}

# end_workers FILE: the job is over for the workers of FILE: the stop port
# tells them (open_stop_port), or, where it cannot be opened, a call to
# each over ssh (stop_workers).
end_workers() {
    [ -s "$1" ] || return 0
    [ "$STOP_PORT" != 0 ] && open_stop_port "$(wc -l <"$1")" && return 0
    stop_workers "$1"
}

# stop_banner: sets STOP_BANNER, the line that says the job is over: the
# same in every pod of the job (from its public key), unlike any other
# server's.
stop_banner() {
    STOP_BANNER="trainsonnet-stop-$(cksum <"$SSH_DIR/id.pub" 2>/dev/null | awk '{ print $1 }')"
}

# end_server_ssh PORT TOKEN N LINGER: the launcher's END_SERVER: python3's,
# else a second sshd whose banner carries the token (VersionAddendum).
end_server_ssh() {
    end_server_python "$@" && return 0
    END_NONE='no python3 here, and no sshd that can run'
    sshd_path && { [ -e "$SSH_DIR/ssh_host_ed25519_key" ] || host_key; } 2>/dev/null &&
        test_sshd -f "$SSHD_CONFIG" || return 1
    END_BY=sshd
    { "$SSHD" -D -f "$SSHD_CONFIG" -p "$1" -o "VersionAddendum=$2" \
        -o PidFile=none -o LogLevel=QUIET </dev/null & } >"$END_FILE.out" 2>&1
    LISTEN_PID=$!
}

# open_stop_port N: the launcher's end port (runtime.sh), STOP_PORT, tells
# the N workers that the job is over. Returns 1 when it cannot be opened:
# stop_workers then.
open_stop_port() {
    stop_banner
    open_end_port "$STOP_PORT" "$STOP_BANNER" "$1" "worker(s)"
}

launcher_cleanup() {
    stop_helpers
    stop_sshd
}

# The launcher: a signal before or after TS_EXEC ends it (143, 130; 0 in
# interactive mode, where SIGTERM is the normal end); while TS_EXEC runs, it
# is passed on, and the launcher exits with it once TS_EXEC has ended.
cmd_launcher() {
    trap launcher_cleanup EXIT
    trap_signals
    load_config
    TS_EXEC=${TS_EXEC:-}
    [ -r "$TS_HOSTFILE" ] || die 2 "hostfile $TS_HOSTFILE not found or not readable (TS_HOSTFILE)"
    if [ -n "${TS_SELF:-}" ] && ! awk -v s="$TS_SELF" '$1 == s { f = 1 } END { exit !f }' "$TS_HOSTFILE"; then
        log "warning: TS_SELF=$TS_SELF is not an entry of $TS_HOSTFILE"
    fi
    ssh_setup
    HOSTS=$SSH_DIR/workers
    hosts "${TS_SELF:-}" >"$HOSTS" || die 1 "cannot write $HOSTS"
    end_every "$(hosts | wc -l)"
    [ -n "${TS_SELF:-}" ] && start_sshd
    _cl_end=ssh
    [ "${TS_END_BY:-}" != job ] || _cl_end=job
    [ "$STOP_PORT" = 0 ] || { py_end && _cl_end=python3; } || { sshd_path && _cl_end=sshd; }
    tcp_tool || :
    tier_line "${TCP_TOOL:-ssh}" "$_cl_end"
    wait_for_workers "$HOSTS"
    [ "${1:-}" != wait ] || exit 0 # the key copies stay in $SSH_DIR for the ENTRYPOINT
    if [ -z "$TS_EXEC" ]; then
        log "TS_EXEC is empty: interactive mode, staying up until SIGTERM (kubectl exec into this pod)"
        SIGNAL_EXIT=0
        while :; do nap 3600; done
    fi
    log "running TS_EXEC: $TS_EXEC"
    start_child TS_EXEC sh -c "$TS_EXEC"
    wait_child
    _cl_rc=$?
    if [ -n "$GOT_SIGNAL" ]; then
        # The pod is being deleted or disrupted: the workers will notice the
        # launcher going away by themselves.
        log "TS_EXEC ended with code $_cl_rc after a signal; exiting $GOT_SIGNAL without stopping the workers"
        exit "$GOT_SIGNAL"
    fi
    log "TS_EXEC exited with code $_cl_rc"
    [ "${TS_END_BY:-}" != job ] || exit "$_cl_rc" # the Job controller stops the workers
    if [ "$_cl_rc" -ne 0 ] && ! ends_on_failure; then
        # The Job may retry the launcher (backoffLimit > 0): leave the
        # workers up for the next attempt. Once the launcher is gone for
        # good, they stop by themselves after TS_LAUNCHER_GRACE.
        log "leaving the workers up for a retry of the launcher (TS_END_ON_FAILURE=0)"
        exit "$_cl_rc"
    fi
    # A signal from here on ends the launcher with TS_EXEC's code.
    SIGNAL_EXIT=$_cl_rc
    end_workers "$HOSTS"
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

# On every exit: stop sshd and leave $TS_RUN_DIR/finished for the uploader.
worker_cleanup() {
    stop_helpers
    stop_sshd
    touch "$TS_RUN_DIR/finished" 2>/dev/null ||
        log "warning: cannot create $TS_RUN_DIR/finished"
}

cmd_worker() {
    # Installed first: even a configuration error leaves "finished" behind,
    # so that the uploader does not wait in vain.
    TS_RUN_DIR=${TS_RUN_DIR:-/var/run/trainsonnet}
    trap worker_cleanup EXIT
    trap_signals
    load_config
    require TS_LAUNCHER
    case ${TS_WAIT_FOR_GPU_DRIVER:-0} in
    1 | true) wait_for_gpu_driver ;;
    esac
    # The launcher's name resolves through its headless Service as long as
    # its container runs.
    # Every worker asks DNS: the more of them, the less often each.
    _cw_n=$(hosts 2>/dev/null | wc -l)
    end_every "$_cw_n"
    # TS_LAUNCHER_GRACE=0: the worker outlives the launcher, which comes
    # back to it (an interactive cluster, deleted as a whole).
    if [ "${TS_END_BY:-}" = job ] && watch_init "$TS_LAUNCHER" 0 "$_cw_n" "$END_EVERY"; then
        log "the Job controller ends the job; $TS_LAUNCHER is asked every ${WATCH_EVERY}s only to learn whether this pod is cut off (resolving nothing for ${TS_LOST_GRACE}s)"
    elif [ "${TS_END_BY:-}" = job ] || [ "$TS_LAUNCHER_GRACE" = 0 ]; then
        watch_init '' 0
        log "launcher watchdog off (TS_LAUNCHER_GRACE=0): this worker serves until it is told to stop or deleted, whether $TS_LAUNCHER is there or not"
    elif watch_init "$TS_LAUNCHER" "$TS_LAUNCHER_GRACE" "$_cw_n" "$END_EVERY"; then
        log "launcher watchdog: $TS_LAUNCHER must resolve within ${TS_INIT_TIMEOUT}s; once it has not resolved for ${TS_LAUNCHER_GRACE}s the job counts as ended (asked every ${WATCH_EVERY}s, every ${WATCH_EARLY}s until it first resolves)"
    else
        log "warning: getent not found; launcher watchdog disabled, only the launcher's word ends this container"
    fi
    ssh_setup
    WATCH_OUT=$SSH_DIR/launcher
    stop_banner
    if [ "$STOP_PORT" = 0 ]; then
        :
    elif banner_tool; then
        log "the launcher says when the job is over on its port $STOP_PORT, read every ${END_EVERY}s (with $BANNER_TOOL)"
    else
        log "warning: no bash, python3, nc or ssh to read the launcher's port $STOP_PORT with; only its stop file, or its going away, ends this container"
    fi
    tier_line '' '' "$BANNER_TOOL" "${WATCH_NAME:+getent}"
    start_sshd
    # A stop file left by an earlier run of this container in the same pod
    # means that the job is over: exiting at once is right.
    while :; do
        if [ -e "$TS_RUN_DIR/stop" ]; then
            log "the launcher asked us to stop; exiting"
            exit 0
        fi
        sshd_alive || die 1 "sshd (pid $SSHD_PID) exited unexpectedly; see its messages above"
        if final_check; then
            log "the launcher says the job is over (its port $STOP_PORT); exiting"
            exit 0
        fi
        watch_check
        case $WATCH in
        never) die 124 "gave up after ${TS_INIT_TIMEOUT}s waiting for the launcher: $TS_LAUNCHER never resolved" ;;
        gone)
            log "launcher $TS_LAUNCHER has not resolved for ${TS_LAUNCHER_GRACE}s; assuming the job ended"
            exit 0
            ;;
        lost) die 69 "launcher $(lost_message "$TS_LAUNCHER")" ;;
        esac
        nap "$TS_POLL_INTERVAL"
    done
}

# final_check: whether the launcher's stop port says that the job is
# over; asked every END_EVERY seconds, at the launcher's address once the
# watchdog has resolved it (by name without a watchdog).
final_check() {
    [ -n "$BANNER_TOOL" ] && [ "$STOP_PORT" != 0 ] || return 1
    _fc_to=$WATCH_ADDR
    [ -n "$WATCH_NAME" ] || _fc_to=$TS_LAUNCHER
    end_heard "$_fc_to" "$STOP_PORT" "$STOP_BANNER"
}

# ------------------------------------------------------------------- main

SSHD_PID='' STOP_PORT=0 STOP_BANNER='' END_SERVER=end_server_ssh

# No pathname expansion anywhere: host lists are split on blanks on purpose
# and must never be globbed. (TS_EXEC runs in its own sh.)
set -f
case ${1:-} in
launcher | wait) cmd_launcher "$1" ;;
worker) cmd_worker ;;
indexed) if [ "${JOB_COMPLETION_INDEX:-}" = 0 ]; then cmd_launcher; else cmd_worker; fi ;;
-h | --help | help) usage ;;
'') usage_error "missing subcommand" ;;
*) usage_error "unknown subcommand '$1'" ;;
esac

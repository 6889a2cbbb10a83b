#!/bin/sh
# trainsonnet: the lifecycle of a job's pods, whatever their role.
#
#   sh runtime.sh run [--wait-tcp HOST:PORT]... [--watch NAME [--hear-end PORT]]
#                     [--tell-end PORT] [--group SERVICE:COUNT --group-lead NAME]
#                     -- CMD [ARG]...
#     Waits until every HOST:PORT accepts TCP connections, runs CMD, exits
#     with its code. SIGTERM and SIGINT go on to CMD as SIGTERM (sh starts a
#     background command with SIGINT ignored); the script then exits 128+n.
#     --watch NAME: once the DNS name NAME has resolved and then not for
#     TS_WATCH_GRACE seconds, CMD gets SIGTERM (SIGKILL 30 s later) and the
#     script exits 0. NAME is a headless Service of the pod CMD serves (a
#     chief, a driver): the role ends with it, without RBAC. If NAME never
#     resolves within TS_WATCH_TIMEOUT, CMD is stopped too, with exit 124.
#     If TS_DNS_PROBE does not resolve either once NAME has not for
#     TS_LOST_GRACE, this pod has lost the cluster's DNS (its network cut),
#     not NAME: CMD is stopped, exit 69, a failure its Job replaces.
#     --hear-end PORT (with --watch): NAME's pod says on PORT when the job
#     is over (its --tell-end); CMD is then stopped at once, exit 0, with
#     no TS_WATCH_GRACE: that grace is for a lead that is retried.
#     --tell-end PORT: once CMD has ended, say so on PORT (the end port,
#     below) until the TS_FOLLOWERS pods that --hear-end have read it, or
#     could have; then exit with CMD's code. Not after a signal, nor after
#     a failure with TS_END_ON_FAILURE=0 (the Job retries the lead: its
#     followers must stay for the retry).
#     --group SERVICE:COUNT --group-lead NAME: CMD is one of COUNT pods (an
#     Indexed Job's, behind the headless Service SERVICE; NAME is index
#     0's) that go on together or not at all (torchrun's static rendezvous).
#     Index 0 reads SERVICE: once its COUNT addresses have held for
#     TS_GROUP_SETTLE, a new one in two answers (a pod made again: one
#     failed or was lost; a pod that succeeded is not) ends the group; the
#     others read NAME: another address (index 0 made again), or none for
#     TS_WATCH_GRACE, ends it. CMD then gets SIGTERM, and the script exits
#     75 (0 if CMD succeeded): the Job ignores 75 and makes the pod again.
#     A pod that resolves nothing is lost (69).
#     (The wait alone, for an init container: run --wait-tcp ... -- true.)
#   . "${TS_CONFIG_DIR:-/etc/trainsonnet}/runtime.sh"
#     the functions below, for the role scripts (mpi.sh, s3.sh): a script
#     not named runtime.sh that sources it runs nothing of it.
#
# HOST is a DNS name or an IP address. The endpoints are tried by one
# process a round, a sweep: python3 with tcp.py, beside this script in
# TS_CONFIG_DIR [/etc/trainsonnet] (TS_PARALLEL connections in flight, at
# most SWEEP_RATE started a second); without it, one bash (/dev/tcp) or
# nc (with -z) per endpoint, TS_PARALLEL at a time. TS_TCP_TOOL (python3,
# bash or nc) picks one of those in PATH.
# --watch and --group need getent.
#
# Environment, whole seconds [default]: TS_INIT_TIMEOUT [300] bounds every
# start-up wait; TS_WATCH_TIMEOUT [TS_INIT_TIMEOUT] bounds the wait for
# --watch's NAME to first resolve (0: no bound, the job's own deadline is
# the bound); TS_WATCH_GRACE [60]; TS_POLL_INTERVAL [2] between checks.
# TS_PARALLEL [32]: connections, probes (or, in mpi.sh, stop calls) at a time.
# The end port: TS_END_TOKEN [job], the same in every pod of the job (the
# lead's name), in the line that says the job is over; TS_FOLLOWERS [1],
# the pods that read it; TS_END_ON_FAILURE [1]. TS_DNS_PROBE
# [kubernetes.default.svc]: a name every pod resolves, asked once a watched
# name has not for TS_LOST_GRACE [90] (or its grace; empty: never asked).
#
# TS_GROUP_SETTLE [30]: --group's, above: longer than a pod of the last
# attempt takes to end (its lead made again: TS_POLL_INTERVAL, SIGTERM).
#
# Exit codes: 0 done; 1 runtime failure; 2 usage or configuration error;
# 69 this pod lost the cluster's DNS (cut off): its Job should replace it;
# 75 a pod of --group's was made again: its Job should make this one again too;
# 124 a start-up wait ran out of time (the message names what never
# answered); 127 a needed program is missing; 128+n a signal (143 SIGTERM,
# 130 SIGINT); else CMD's own code.
#
# POSIX sh (dash, busybox sh, bash --posix). No `local`, so each function
# prefixes its variables with a short tag; integer `sleep` only. A helper
# started in the background gets its redirections from a group, { cmd & },
# before the fork: bash may warn in a new child before the child's own
# redirections are in place.

# The scripts' own variables (runtime.sh's and mpi.sh's) start unset,
# whatever the pod's environment says: a user's env reaches it.
unset BANNER_TOOL BOUNDED_PID CHILD_NAME CHILD_PID END_BY END_EVERY END_SERVER \
    END_FILE END_LINGER END_MAX END_NEXT END_NONE END_RATE GOT_SIGNAL GROUP_AT GROUP_BASE \
    GROUP_LEAD GROUP_NEWS GROUP_NEXT GROUP_SEEN GROUP_SIZE GROUP_WHY HAVE_TIMEOUT HOSTS \
    LANE_PIDS LISTEN_PID NAP_PID SESSION SIGNAL_EXIT SSHD \
    SSHD_CONFIG SSHD_PID SSH_CONFIG SSH_DIR STOP_BANNER STOP_BOUND STOP_PORT \
    SWEEP_PID SWEEP_WATCH TCP_TOOL USER_NAME WAIT_DEADLINE WAIT_PORT WATCH \
    WATCH_DB WATCH_EARLY WATCH_EVERY WATCH_FOR WATCH_NEXT WATCH_OUT WATCH_SEEN
PROG=trainsonnet
PROBE_MAX=10  # seconds one probe may take, even with time to spare
KILL_AFTER=30 # seconds a stopped CMD has before SIGKILL
# Endpoints a python3 sweep starts a second, at most: each a DNS lookup
# of its host (A and AAAA) when it is a name.
SWEEP_RATE=500
# Seconds a sweep may go without an answer before it counts as stuck (a
# DNS lookup is not bounded by a connection's timeout).
STALL_MAX=$((PROBE_MAX + 2))

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }

# die CODE MESSAGE...
die() {
    _die_code=$1
    shift
    log "$*"
    exit "$_die_code"
}

now() { date +%s; }

# need PROGRAM WHY: exits 127 when PROGRAM is not in PATH.
need() { command -v "$1" >/dev/null 2>&1 || die 127 "$1 not found in PATH ($2)"; }

# require VAR...: exits 2 naming the first variable that is unset or empty.
require() {
    for _rq_var in "$@"; do
        eval "_rq_val=\${$_rq_var:-}"
        [ -n "$_rq_val" ] || die 2 "missing required environment variable $_rq_var"
    done
}

# seconds VAR...: whole numbers. trainsonnet's parameters check more; this
# is for values set by hand (an overlay's env patch, a script of one's own).
seconds() {
    for _sc_var in "$@"; do
        _sc_val=''
        eval "_sc_val=\${$_sc_var:-}"
        case $_sc_val in
        '' | *[!0-9]*) die 2 "$_sc_var must be a whole number of seconds, got '$_sc_val'" ;;
        esac
    done
}

runtime_config() {
    TS_INIT_TIMEOUT=${TS_INIT_TIMEOUT:-300}
    TS_WATCH_GRACE=${TS_WATCH_GRACE:-60}
    TS_POLL_INTERVAL=${TS_POLL_INTERVAL:-2}
    TS_PARALLEL=${TS_PARALLEL:-32}
    TS_WATCH_TIMEOUT=${TS_WATCH_TIMEOUT:-$TS_INIT_TIMEOUT}
    TS_DNS_PROBE=${TS_DNS_PROBE-kubernetes.default.svc}
    TS_LOST_GRACE=${TS_LOST_GRACE:-90}
    TS_GROUP_SETTLE=${TS_GROUP_SETTLE:-30}
    seconds TS_INIT_TIMEOUT TS_WATCH_GRACE TS_POLL_INTERVAL TS_PARALLEL TS_WATCH_TIMEOUT TS_LOST_GRACE TS_GROUP_SETTLE
    [ "$TS_PARALLEL" -gt 0 ] || die 2 "TS_PARALLEL must be at least 1"
    case ${TS_TCP_TOOL:-} in
    '' | python3 | bash | nc) ;;
    *) die 2 "TS_TCP_TOOL must be python3, bash or nc, got '$TS_TCP_TOOL'" ;;
    esac
}

# nap SECS: sleep in the background and wait for it, so that a trapped signal
# is handled at once instead of after the sleep (sh runs traps only between
# commands, but `wait` returns as soon as a trapped signal arrives).
nap() {
    { sleep "$1" & } >/dev/null 2>&1
    NAP_PID=$!
    wait "$NAP_PID"
    NAP_PID=''
}

# kill_after PID SECS [EVERY]: SIGTERM to PID after SECS seconds (with
# EVERY=1 every second until then: one that reaches a child between fork
# and exec is lost), a second later SIGKILL; returns once PID is gone.
kill_after() {
    _ka_left=$2
    while [ "$_ka_left" -gt 0 ]; do
        sleep 1
        kill -0 "$1" 2>/dev/null || return 0
        [ "${3:-}" = 1 ] && kill -TERM "$1" 2>/dev/null
        _ka_left=$((_ka_left - 1))
    done
    kill -TERM "$1" 2>/dev/null && sleep 1 && kill -KILL "$1" 2>/dev/null
}

# terminate PID SECS: stops a child: SIGTERM, SIGKILL after SECS seconds.
terminate() {
    kill -TERM "$1" 2>/dev/null || return 0
    { kill_after "$1" "$2" 1 & } >/dev/null 2>&1
    _te_killer=$!
    while kill -0 "$1" 2>/dev/null; do wait "$1" 2>/dev/null; done
    kill "$_te_killer" 2>/dev/null
    return 0
}

# run_bounded SECS CMD...: runs CMD (a program, not a function: timeout(1)
# executes it) for at most SECS seconds and returns its status (non-zero
# when it was killed). CMD runs in the background so that a signal to this
# script is handled at once; BOUNDED_PID lets the handlers kill it.
run_bounded() {
    _rb_secs=$1
    shift
    if [ -z "$HAVE_TIMEOUT" ]; then
        # "timeout SECS CMD" (coreutils, busybox >= 1.30); an old busybox
        # wants "-t SECS", which this probe rejects.
        HAVE_TIMEOUT=0
        command -v timeout >/dev/null 2>&1 && timeout 5 sleep 0 >/dev/null 2>&1 && HAVE_TIMEOUT=1
    fi
    if [ "$HAVE_TIMEOUT" = 1 ]; then
        timeout "$_rb_secs" "$@" &
        BOUNDED_PID=$!
        wait "$BOUNDED_PID"
        _rb_rc=$?
    else
        "$@" &
        BOUNDED_PID=$!
        { kill_after "$BOUNDED_PID" "$_rb_secs" & } >/dev/null 2>&1
        _rb_killer=$!
        wait "$BOUNDED_PID"
        _rb_rc=$?
        kill "$_rb_killer" 2>/dev/null
        wait "$_rb_killer" 2>/dev/null
    fi
    BOUNDED_PID=''
    return "$_rb_rc"
}

# lanes N FUNC IN OUT: `FUNC LINE` for every line of IN, at most N at a
# time: lane i of N takes every Nth line, in order. OUT gets "RC LINE" for
# each line tried; a lane stops at the first RC 200 (FUNC's "too late"),
# leaving the rest of its lines untried. LANE_PIDS is for stop_helpers.
lanes() {
    [ -n "$HAVE_TIMEOUT" ] || run_bounded 5 sleep 0 # decided here, not per lane
    awk -v n="$1" -v p="$3" '{ print > (p "." ((NR - 1) % n)) }' "$3"
    LANE_PIDS='' _la_i=0
    while [ "$_la_i" -lt "$1" ] && [ -f "$3.$_la_i" ]; do
        { lane "$2" "$3.$_la_i" & } >/dev/null 2>&1
        LANE_PIDS="$LANE_PIDS $!" _la_i=$((_la_i + 1))
    done
    for _la_pid in $LANE_PIDS; do wait "$_la_pid"; done
    LANE_PIDS='' _la_i=$((_la_i - 1))
    : >"$4"
    while [ "$_la_i" -ge 0 ]; do
        cat "$3.$_la_i.out" >>"$4" && rm -f "$3.$_la_i" "$3.$_la_i.out"
        _la_i=$((_la_i - 1))
    done
}

lane() {
    while read -r _ln_t; do
        "$1" "$_ln_t" </dev/null >/dev/null 2>&1
        _ln_rc=$?
        [ "$_ln_rc" = 200 ] && break
        echo "$_ln_rc $_ln_t"
    done <"$2" >"$2.out"
}

# wait_all NOUN VIA PROBE FILE: returns once every TARGET, a line of FILE
# (no blanks, no duplicates), has answered. PROBE sweep tries them all in
# one process a round (sweep: TCP, with TCP_TOOL python3; WAIT_PORT
# is the port of targets that are bare hosts); any other PROBE is a
# function, `PROBE TARGET SECS` (SECS bounds it), run TS_PARALLEL at a time
# (lanes). Those that failed are tried again a second after each round.
# After TS_INIT_TIMEOUT seconds it names those that never answered, apart
# from those never tried for lack of time, and returns 1; FILE.ok then
# lists those that did. NOUN is singular ("worker"), VIA how they are
# reached ("over ssh on port 2022").
wait_all() {
    _wa_noun=$1 _wa_via=$2 WAIT_PROBE=$3 _wa_f=$4
    _wa_start=$(now)
    WAIT_DEADLINE=$((_wa_start + TS_INIT_TIMEOUT))
    _wa_n=$(wc -l <"$_wa_f")
    _wa_what="$_wa_n ${_wa_noun}s"
    [ "$_wa_n" -eq 1 ] && _wa_what="1 $_wa_noun"
    case $WAIT_PROBE/$TCP_TOOL in
    sweep/*) _wa_how="by python3: $TS_PARALLEL connections at a time, at most $SWEEP_RATE started a second" ;;
    *) _wa_how="$TS_PARALLEL at a time${TCP_TOOL:+, by $TCP_TOOL}" ;;
    esac
    log "waiting up to ${TS_INIT_TIMEOUT}s for $_wa_what to answer $_wa_via, $_wa_how"
    cp "$_wa_f" "$_wa_f.pending" || die 1 "cannot write next to $_wa_f"
    : >"$_wa_f.ok" && : >"$_wa_f.tried" && _wa_last=''
    while :; do
        if [ "$WAIT_PROBE" = sweep ]; then
            sweep "$_wa_f.pending" "$_wa_f.round"
        else
            lanes "$TS_PARALLEL" wait_try "$_wa_f.pending" "$_wa_f.round"
        fi
        awk -v t="$_wa_f.tried" '{ print $2 >>t } $1 == 0 { print $2 }' "$_wa_f.round" >>"$_wa_f.ok"
        awk 'FILENAME == ARGV[1] { ok[$0]; next } !($0 in ok)' "$_wa_f.ok" "$_wa_f.pending" >"$_wa_f.next"
        mv "$_wa_f.next" "$_wa_f.pending"
        _wa_left=$(wc -l <"$_wa_f.pending")
        if [ "$_wa_left" -eq 0 ]; then
            log "all $_wa_what reachable after $(($(now) - _wa_start))s"
            break
        fi
        if [ "$(now)" -ge "$WAIT_DEADLINE" ]; then
            # shellcheck disable=SC2016 # awk's $0
            _wa_in='FILENAME == ARGV[1] { t[$0]; next } ($0 in t) == want { printf "%s%s", s, $0; s = " " }'
            _wa_no=$(awk -v want=1 "$_wa_in" "$_wa_f.tried" "$_wa_f.pending")
            _wa_never=$(awk -v want=0 "$_wa_in" "$_wa_f.tried" "$_wa_f.pending")
            log "gave up after ${TS_INIT_TIMEOUT}s waiting for ${_wa_noun}s; ${_wa_no:+not reachable $_wa_via: $_wa_no}${_wa_no:+${_wa_never:+; }}${_wa_never:+no time left to try: $_wa_never}"
            break
        fi
        # Who is still awaited, by name while they are few.
        [ "$_wa_left" = "$_wa_last" ] ||
            log "$((_wa_n - _wa_left)) of $_wa_what answered after $(($(now) - _wa_start))s; trying the other $_wa_left again: $(awk 'NR <= 10 { printf "%s%s", s, $0; s = " " } END { if (NR > 10) printf " and %d more", NR - 10 }' "$_wa_f.pending")"
        _wa_last=$_wa_left
        nap 1
    done
    rm -f "$_wa_f.tried" "$_wa_f.round"
    [ "$_wa_left" -eq 0 ]
}

# wait_try TARGET: WAIT_PROBE bounded by the time left (200: none).
wait_try() {
    _wt_left=$((WAIT_DEADLINE - $(now)))
    [ "$_wt_left" -gt 0 ] || return 200
    [ "$_wt_left" -gt "$PROBE_MAX" ] && _wt_left=$PROBE_MAX
    "$WAIT_PROBE" "$1" "$_wt_left"
}

# sweep IN OUT: one round of wait_all: every target of IN (HOST, with
# WAIT_PORT, or HOST:PORT) tried for a TCP connection by one process, the
# sweeper, which writes "RC TARGET" to OUT as it goes (RC 0: connected).
# A sweeper that goes STALL_MAX seconds without a new line, or runs into
# WAIT_DEADLINE, is stopped: the target it hung on counts as failed (RC
# 124) and, while time is left, a new one goes on after it. Targets never
# tried get no line. Its processes do not grow with the targets: one
# sweeper, one stall_watch.
sweep() {
    : >"$2"
    cp "$1" "$1.todo" || die 1 "cannot write next to $1"
    while [ -s "$1.todo" ]; do
        { sweeper "$1.todo" & } >>"$2" 2>/dev/null
        SWEEP_PID=$!
        { stall_watch "$SWEEP_PID" "$2" & } >/dev/null 2>&1
        SWEEP_WATCH=$!
        while :; do
            # 2>/dev/null: dash reports a sweeper stopped by a signal.
            wait "$SWEEP_PID" 2>/dev/null
            _sw_rc=$?
            [ "$_sw_rc" -gt 128 ] && kill -0 "$SWEEP_PID" 2>/dev/null && continue
            break
        done
        kill "$SWEEP_WATCH" 2>/dev/null
        wait "$SWEEP_WATCH" 2>/dev/null
        SWEEP_PID='' SWEEP_WATCH=''
        awk 'FILENAME == ARGV[1] { done[$2]; next } !($0 in done)' "$2" "$1.todo" >"$1.left"
        mv "$1.left" "$1.todo"
        # Ended by itself: every target tried, or no time left to start one.
        if [ "$_sw_rc" -le 128 ]; then
            [ "$_sw_rc" = 0 ] || log "warning: the $TCP_TOOL sweep failed (exit code $_sw_rc); trying again"
            break
        fi
        [ -s "$1.todo" ] || break
        read -r _sw_hung <"$1.todo"
        echo "124 $_sw_hung" >>"$2"
        sed 1d "$1.todo" >"$1.left"
        mv "$1.left" "$1.todo"
        [ "$(now)" -lt "$WAIT_DEADLINE" ] || break
    done
    rm -f "$1.todo"
}

# stall_watch PID OUT: stops PID, a sweeper, once OUT has not grown for
# STALL_MAX seconds, or at WAIT_DEADLINE.
stall_watch() {
    _st_lines=-1 _st_since=$(now)
    while sleep 1 && kill -0 "$1" 2>/dev/null; do
        _st_now=$(now) _st_n=$(wc -l <"$2")
        [ "$_st_n" = "$_st_lines" ] || _st_lines=$_st_n _st_since=$_st_now
        [ $((_st_now - _st_since)) -lt "$STALL_MAX" ] && [ "$_st_now" -lt "$WAIT_DEADLINE" ] && continue
        kill -TERM "$1" 2>/dev/null
        return 0
    done
}

# sweeper FILE: run in the background, becomes tcp.py's sweep of FILE:
# TS_PARALLEL connections in flight, each bounded by PROBE_MAX and the
# time left, at most SWEEP_RATE started a second, none after the deadline.
sweeper() {
    exec python3 "$TCP_PY" sweep "$1" "$WAIT_PORT" "$TS_PARALLEL" "$SWEEP_RATE" "$WAIT_DEADLINE" "$PROBE_MAX"
}

# usable VAR TOOL...: sets VAR to the first TOOL in PATH that works
# (python3: with tcp.py beside this script; nc: one with -z, the usual
# kind), or to '' and returns 1.
usable() {
    _us_var=$1
    shift
    for _us_tool in "$@"; do
        command -v "$_us_tool" >/dev/null 2>&1 || continue
        case $_us_tool in
        python3) python3 "$TCP_PY" check >/dev/null 2>&1 || continue ;;
        nc) nc -h 2>&1 | grep -q -e '-[0-9A-Za-z]*z' || continue ;;
        esac
        eval "$_us_var=\$_us_tool" && return 0
    done
    eval "$_us_var=''" && return 1
}

# tcp_tool: TCP_TOOL, the first of TS_TCP_TOOL (default: python3, bash,
# nc) that works: python3 sweeps (wait_all's PROBE sweep), bash and nc
# probe one endpoint each (tcp_probe).
# shellcheck disable=SC2086 # a list of names
tcp_tool() { usable TCP_TOOL ${TS_TCP_TOOL:-python3 bash nc}; }

# tcp_probe HOST:PORT SECS: whether it accepts a TCP connection.
tcp_probe() {
    # shellcheck disable=SC2016 # $0 and $1 are that bash's
    case $TCP_TOOL in
    bash) run_bounded "$2" bash -c ': <>"/dev/tcp/$0/$1"' "${1%:*}" "${1##*:}" ;;
    *) run_bounded "$2" nc -z -w "$2" "${1%:*}" "${1##*:}" ;;
    esac >/dev/null 2>&1
}

# banner_tool: BANNER_TOOL for read_banner, the first of bash, python3, nc
# and ssh that works.
banner_tool() { usable BANNER_TOOL bash python3 nc ssh; }

# read_banner HOST PORT SECS: prints the first line the server at
# HOST:PORT sends (an ssh server's banner), read within SECS seconds
# with BANNER_TOOL; ssh prints it inside its debug output.
read_banner() {
    # shellcheck disable=SC2016 # $0.. are that bash's
    case $BANNER_TOOL in
    bash) run_bounded "$3" bash -c '{ IFS= read -r -t "$2" l <&3 && printf "%s\n" "$l"; } 3<>"/dev/tcp/$0/$1"' "$1" "$2" "$3" ;;
    python3) run_bounded "$3" python3 "$TCP_PY" banner "$1" "$2" "$3" ;;
    nc) run_bounded "$3" nc -w "$3" "$1" "$2" ;;
    ssh) run_bounded "$3" ssh -v -n -F /dev/null -o BatchMode=yes -o ConnectTimeout="$3" \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p "$2" "$1" true 2>&1 ;;
    *) return 1 ;;
    esac </dev/null
}

# ---------------------------------------------------------- the end port
#
# A lead says that the job is over on a TCP port of its own, its end port:
# once its command has ended it answers every connection there, for a
# while, with one line that no other server sends, in the form of an ssh
# banner ("SSH-2.0-trainsonnet TOKEN"), so that every BANNER_TOOL, ssh
# too, reads it. Its followers read that port at the address the lead's
# name last resolved to, every END_EVERY seconds (END_RATE connections a
# second from all of them, which the kernel refuses while the job runs),
# and end at once when it says so, instead of waiting out the grace that
# a lead's retry needs. mpi.sh's launcher and workers use it, and `run
# --tell-end` and `--hear-end`.

# Connections a second that reach an end port from all the followers,
# whatever their number: each reads it every END_EVERY = followers/END_RATE
# seconds (at least TS_POLL_INTERVAL).
END_RATE=250
END_MAX=3 # seconds one read of an end port may take

# ends_on_failure: whether a lead whose command failed says that the job
# is over: not with TS_END_ON_FAILURE=0 (the Job retries the lead, and its
# followers stay for the retry; mpi.sh's older name for it,
# TS_STOP_WORKERS_ON_FAILURE, is read too).
ends_on_failure() { [ "${TS_END_BY:-}" != job ] && [ "${TS_END_ON_FAILURE:-${TS_STOP_WORKERS_ON_FAILURE:-1}}" != 0 ]; }

# end_every N: END_EVERY for a job of N followers, as every pod computes it.
end_every() {
    END_EVERY=$(($1 / END_RATE))
    [ "$END_EVERY" -ge "$TS_POLL_INTERVAL" ] || END_EVERY=$TS_POLL_INTERVAL
}

# end_said ADDRESS PORT TOKEN: whether PORT at ADDRESS answers with TOKEN,
# read as the followers read it (read_banner; the answer in $END_FILE.read).
end_said() {
    read_banner "$1" "$2" "$END_MAX" >"$END_FILE.read" 2>&1
    awk -v b="$3" 'index($0, b) { f = 1 } END { exit !f }' "$END_FILE.read"
}

# end_heard HOST PORT TOKEN: end_said, asked at most every END_EVERY
# seconds (END_NEXT); 1 in between.
end_heard() {
    [ -n "$1" ] || return 1
    _eh_now=$(now)
    [ "$_eh_now" -ge "$END_NEXT" ] || return 1
    END_NEXT=$((_eh_now + END_EVERY))
    end_said "$1" "$2" "$3"
}

# END_SERVER PORT TOKEN N LINGER: the function that starts the end port's
# server in the background: LISTEN_PID, END_BY (what serves it), its output
# in $END_FILE.out, END_LINGER (its bound); returns 1 when it cannot,
# END_NONE saying why. Here end_server_python (tcp.py serve: it exits once
# the lead's own check and N followers, distinct addresses, have connected,
# or after 3 x LINGER s, a loaded node's follower's three chances, printing
# how many did); mpi.sh names its own, which adds a second sshd.

# py_end: whether python3 can serve the end port (tcp.py beside this).
py_end() { command -v python3 >/dev/null 2>&1 && python3 "$TCP_PY" check >/dev/null 2>&1; }

# tier_line WAIT SERVE HEAR WATCH: the one start-up line naming the tool
# each path of this pod takes, - where it has none (docs/runtime.md: the
# table of them, a test a cell).
tier_line() { log "tiers: wait=${1:--} serve-end=${2:--} hear-end=${3:--} watch=${4:--}"; }

end_server_python() {
    END_NONE='no python3 here'
    py_end || return 1
    END_BY=python3 END_LINGER=$(($4 * 3))
    { python3 "$TCP_PY" serve "$1" "SSH-2.0-trainsonnet $2" "$3" "$END_LINGER" & } >"$END_FILE.out" 2>&1
    LISTEN_PID=$!
}

# open_end_port PORT TOKEN N WHO: says on PORT that the job is over,
# checks that it answers as the N followers (WHO, for messages:
# "worker(s)") will read it, and keeps it open until each can have read
# it: END_EVERY, a tick and a read's bound (python3 closes it as soon as
# all N have, and waits three times that for the last). Returns 1 when it
# cannot open it (no server, the port taken, no way to read it back).
open_end_port() {
    banner_tool || return 1
    _op_linger=$((END_EVERY + TS_POLL_INTERVAL + END_MAX + 3)) && END_LINGER=$_op_linger
    if ! "$END_SERVER" "$1" "$2" "$3" "$_op_linger"; then
        log "cannot open port $1: $END_NONE"
        return 1
    fi
    _op_start=$(now)
    # Read back as a follower does: then it is up, and they can read it.
    for _op_try in 1 2 3; do
        end_said 127.0.0.1 "$1" "$2" && break
        if [ "$_op_try" = 3 ] || ! kill -0 "$LISTEN_PID" 2>/dev/null; then
            log "could not open port $1 with $END_BY: $(awk 'END { print }' "$END_FILE.out" 2>/dev/null)"
            terminate "$LISTEN_PID" 3
            LISTEN_PID=''
            return 1
        fi
        nap 1
    done
    log "the job is over: port $1 says so for up to ${END_LINGER}s; each of the $3 $4 reads it every ${END_EVERY}s"
    if [ "$END_BY" = python3 ]; then
        while kill -0 "$LISTEN_PID" 2>/dev/null; do wait "$LISTEN_PID"; done
        log "$(awk 'END { print }' "$END_FILE.out") of $3 $4 read port $1 within $(($(now) - _op_start))s"
    else
        while [ "$(now)" -lt $((_op_start + _op_linger)) ]; do nap 1; done
        terminate "$LISTEN_PID" 3
    fi
    LISTEN_PID=''
    return 0
}

# The DNS watchdog. watch_init NAME GRACE [PODS [EARLY]] starts watching
# NAME (empty: none; returns 1 without getent); then watch_check, every
# tick, sets WATCH to ok, never (NAME did not resolve within
# TS_WATCH_TIMEOUT), gone (it resolved, then not for GRACE seconds in a
# row) or lost (not for TS_LOST_GRACE, and TS_DNS_PROBE does not resolve
# either: this pod has lost DNS), WATCH_FOR to the seconds since NAME last
# resolved, WATCH_ADDR to its first address (with WATCH_OUT, getent's file). DNS is asked every
# TS_POLL_INTERVAL seconds, or, when PODS pods watch NAME, every PODS/50
# (at most GRACE/3) seconds: about 50 queries a second in all; until NAME
# has first resolved, every EARLY seconds if that is sooner. GRACE 0: the
# name gone ends nothing; only a pod that resolves nothing is lost. The first
# question comes at a random point of the first interval, so that pods
# started together do not ask together.
watch_init() {
    WATCH=ok WATCH_NAME=$1 WATCH_GRACE=$2 WATCH_SEEN='' WATCH_FOR=0 WATCH_ADDR='' WATCH_START=$(now)
    WATCH_EVERY=$((${3:-0} / 50))
    [ "$2" = 0 ] || [ "$WATCH_EVERY" -le $(($2 / 3)) ] || WATCH_EVERY=$(($2 / 3))
    [ "$WATCH_EVERY" -gt "$TS_POLL_INTERVAL" ] || WATCH_EVERY=$TS_POLL_INTERVAL
    WATCH_EARLY=${4:-$WATCH_EVERY}
    [ "$WATCH_EARLY" -lt "$WATCH_EVERY" ] || WATCH_EARLY=$WATCH_EVERY
    WATCH_NEXT=$((WATCH_START + $(od -An -N2 -tu2 /dev/urandom 2>/dev/null || echo 0) % (WATCH_EARLY + 1)))
    [ -z "$1" ] || command -v getent >/dev/null 2>&1 || { WATCH_NAME='' && return 1; }
}

watch_check() {
    [ -n "$WATCH_NAME" ] || return 0
    _wk_now=$(now)
    [ "$_wk_now" -ge "$WATCH_NEXT" ] || return 0
    WATCH_NEXT=$((_wk_now + WATCH_EVERY))
    [ -n "$WATCH_SEEN" ] || WATCH_NEXT=$((_wk_now + WATCH_EARLY))
    # Bounded: a slow DNS server must not stall the caller's other checks.
    if run_bounded "$PROBE_MAX" getent "$WATCH_DB" "$WATCH_NAME" >"${WATCH_OUT:-/dev/null}" 2>/dev/null; then
        [ -n "$WATCH_SEEN" ] || log "$WATCH_NAME resolves"
        WATCH_SEEN=$_wk_now
        WATCH=ok
        [ -z "${WATCH_OUT:-}" ] || read -r WATCH_ADDR _wk_rest <"$WATCH_OUT" || WATCH_ADDR=''
        WATCH_NEXT=$((_wk_now + WATCH_EVERY))
    elif [ -z "$WATCH_SEEN" ]; then
        [ "$TS_WATCH_TIMEOUT" = 0 ] || [ $((_wk_now - WATCH_START)) -lt "$TS_WATCH_TIMEOUT" ] || WATCH=never
    else
        WATCH_FOR=$((_wk_now - WATCH_SEEN))
        [ "$WATCH_GRACE" = 0 ] || [ "$WATCH_FOR" -lt "$WATCH_GRACE" ] || WATCH=gone
        [ -z "${TS_DNS_PROBE:-}" ] || { [ "$WATCH" != gone ] && [ "$WATCH_FOR" -lt "$TS_LOST_GRACE" ]; } ||
            run_bounded "$PROBE_MAX" getent hosts "$TS_DNS_PROBE" >/dev/null 2>&1 || WATCH=lost
    fi
}

# group_check: after a watch_check, GROUP_WHY says why the group ended, if
# it has. GROUP_BASE: the lead's address a follower first resolved; the
# lead's, the group's addresses once settled (GROUP_NEXT, since GROUP_AT).
group_check() {
    [ "$WATCH_SEEN" != "$GROUP_SEEN" ] || return 0
    GROUP_SEEN=$WATCH_SEEN
    if [ "$GROUP_LEAD" != self ]; then
        [ "$WATCH_ADDR" = "${GROUP_BASE:=$WATCH_ADDR}" ] ||
            GROUP_WHY="$WATCH_NAME, the group's lead, is now $WATCH_ADDR, not $GROUP_BASE: it was made again"
        return 0
    fi
    _gc_set=" $(awk '!seen[$1]++ { printf "%s ", $1 }' "$WATCH_OUT")"
    if [ -z "$GROUP_BASE" ]; then
        # shellcheck disable=SC2086 # addresses: split on purpose
        set -- $_gc_set
        if [ "$#" != "$GROUP_SIZE" ]; then
            GROUP_NEXT=''
        elif [ -z "$GROUP_NEXT" ] || [ -n "$(not_in "$_gc_set" "$GROUP_NEXT")" ]; then
            GROUP_NEXT=$_gc_set GROUP_AT=$WATCH_SEEN
        elif [ $((WATCH_SEEN - GROUP_AT)) -ge "$TS_GROUP_SETTLE" ]; then
            GROUP_BASE=$_gc_set
            log "the group's $GROUP_SIZE pods are up ($WATCH_NAME): it ends if one of them is made again"
        fi
        return 0
    fi
    _gc_new=$(not_in "$_gc_set" "$GROUP_BASE")
    GROUP_NEWS=$((GROUP_NEWS + 1))
    [ -n "$_gc_new" ] || GROUP_NEWS=0
    [ "$GROUP_NEWS" -lt 2 ] || GROUP_WHY="$WATCH_NAME has$_gc_new, a pod made again in the group of $GROUP_SIZE (one failed or was lost)"
}

# not_in A B: the words of A that are not in B.
not_in() { awk -v a="$1" -v b="$2" 'BEGIN { n = split(b, w); for (i = 1; i <= n; i++) in_b[w[i]]
    n = split(a, w); for (i = 1; i <= n; i++) if (!(w[i] in in_b)) printf " %s", w[i] }'; }

# group_end NAME: the group has ended: CMD (NAME) gets SIGTERM (SIGKILL
# after KILL_AFTER); exits 0 if it had succeeded, else 75 (not its failure).
group_end() {
    log "$GROUP_WHY: the group cannot go on; stopping $1"
    kill -TERM "$CHILD_PID" 2>/dev/null
    { kill_after "$CHILD_PID" "$KILL_AFTER" 1 & } >/dev/null 2>&1
    _ge_killer=$!
    wait_child && log "$1 exited with code 0" && exit 0
    kill "$_ge_killer" 2>/dev/null
    log "exiting 75: the Job makes this pod again, with the group, and counts no failure"
    exit 75
}

# lost_message NAME: what a pod that has lost DNS says.
lost_message() {
    echo "$1 has not resolved for ${WATCH_FOR}s, and neither has $TS_DNS_PROBE: this pod has lost the cluster's DNS (its network cut off?), not $1; exiting 69 so that its Job replaces it"
}

# Signals. After trap_signals, SIGTERM and SIGINT end the script (143, 130;
# SIGNAL_EXIT instead if set), unless a child of start_child runs: then it
# gets SIGTERM, and GOT_SIGNAL holds the code to exit with once it ended.
trap_signals() {
    trap 'on_signal TERM 143' TERM
    trap 'on_signal INT 130' INT
}

on_signal() {
    GOT_SIGNAL=$2
    if [ -n "$CHILD_PID" ]; then
        log "received SIG$1; passing SIGTERM on to $CHILD_NAME (pid $CHILD_PID)"
        kill -TERM "$CHILD_PID" 2>/dev/null
        return 0
    fi
    log "received SIG$1; exiting"
    exit "${SIGNAL_EXIT:-$2}"
}

# start_child NAME CMD...: CMD in the background; NAME is for messages. A
# signal before its pid is known (CHILD_PID starting) is passed on then.
start_child() {
    CHILD_NAME=$1 CHILD_PID=starting
    shift
    "$@" &
    CHILD_PID=$! && { [ -z "$GOT_SIGNAL" ] || kill -TERM "$CHILD_PID" 2>/dev/null; }
}

# wait_child: returns the child's exit code once it has ended. A status
# above 128 may only mean that a trapped signal cut `wait` short.
wait_child() {
    while :; do
        wait "$CHILD_PID"
        _wc_rc=$?
        [ "$_wc_rc" -gt 128 ] && kill -0 "$CHILD_PID" 2>/dev/null && continue
        CHILD_PID=''
        return "$_wc_rc"
    done
}

# stop_helpers: for EXIT traps; ends what this script started and left.
stop_helpers() {
    for _sh_pid in "$CHILD_PID" "$BOUNDED_PID" "$NAP_PID" "$SWEEP_PID" "$SWEEP_WATCH" "$LISTEN_PID" $LANE_PIDS; do
        [ -n "$_sh_pid" ] && kill -TERM "$_sh_pid" 2>/dev/null
    done
    return 0
}

# ------------------------------------------------------------ the command

# usage: this script's; mpi.sh and s3.sh define their own after sourcing it.
usage() {
    echo "usage: sh runtime.sh run [--wait-tcp HOST:PORT]... [--watch NAME [--hear-end PORT]] [--tell-end PORT] [--group SERVICE:COUNT --group-lead NAME] -- CMD [ARG]..."
}

# usage_error MESSAGE: exits 2 after MESSAGE and the script's usage.
usage_error() {
    log "$*"
    usage >&2
    exit 2
}

cmd_run() {
    _cr_tcp='' _cr_watch='' _cr_hear='' _cr_tell='' _cr_group=''
    while [ "$#" -gt 0 ]; do
        case $1 in
        --wait-tcp | --watch | --hear-end | --tell-end | --group | --group-lead) [ -n "${2:-}" ] || usage_error "$1 needs a value" ;;
        esac
        case $1 in
        --watch) _cr_watch=$2 ;;
        --group-lead) GROUP_LEAD=$2 ;;
        --group)
            case $2 in
            *[!A-Za-z0-9.:-]* | :* | *:*:* | *:*[!0-9]* | *:0*) usage_error "--group wants SERVICE:COUNT, got '$2'" ;;
            *:?*) _cr_group=${2%:*} GROUP_SIZE=${2##*:} ;;
            *) usage_error "--group wants SERVICE:COUNT, got '$2'" ;;
            esac
            ;;
        --wait-tcp)
            case $2 in
            :* | *: | *[!A-Za-z0-9.:-]* | *:*[!0-9]* | *:*:*) usage_error "--wait-tcp wants HOST:PORT, got '$2'" ;;
            *:*) _cr_tcp="$_cr_tcp $2" ;;
            *) usage_error "--wait-tcp wants HOST:PORT, got '$2'" ;;
            esac
            ;;
        --hear-end | --tell-end)
            case $2 in
            *[!0-9]* | 0*) usage_error "$1 wants a port number, got '$2'" ;;
            esac
            [ "$2" -le 65535 ] || usage_error "$1 wants a port number, got '$2'"
            if [ "$1" = --hear-end ]; then _cr_hear=$2; else _cr_tell=$2; fi
            ;;
        --) shift && break ;;
        *) usage_error "unknown option '$1' (the command goes after --)" ;;
        esac
        shift 2
    done
    [ "$#" -gt 0 ] || usage_error "no command after --"
    [ -z "$_cr_hear" ] || [ -n "$_cr_watch" ] || usage_error "--hear-end reads the end port of --watch's NAME: give --watch too"
    _cr_pods=''
    if [ -n "$_cr_group$GROUP_LEAD" ]; then
        { [ -n "$_cr_group" ] && [ -n "$GROUP_LEAD" ]; } || usage_error "--group and --group-lead go together"
        [ -z "$_cr_watch" ] || usage_error "--group watches the group's lead: not with --watch"
        # torchrun bounds the wait for its peers; index 0 alone asks for all
        TS_WATCH_TIMEOUT=0 WATCH_OUT=$END_FILE.addr
        case ${JOB_COMPLETION_INDEX:-} in
        '' | *[!0-9]*) die 2 "--group needs JOB_COMPLETION_INDEX, the pod's index in its Indexed Job, got '${JOB_COMPLETION_INDEX:-}'" ;;
        0) GROUP_LEAD=self _cr_watch=$_cr_group WATCH_DB=ahosts _cr_pods=1 ;;
        *) _cr_watch=$GROUP_LEAD _cr_pods=$((GROUP_SIZE - 1)) ;;
        esac
    fi
    trap 'stop_helpers; rm -f "$END_FILE.out" "$END_FILE.read" "$END_FILE.addr"' EXIT
    trap_signals
    runtime_config
    TS_FOLLOWERS=${TS_FOLLOWERS:-1}
    case $TS_FOLLOWERS in
    '' | *[!0-9]*) die 2 "TS_FOLLOWERS must be a whole number, got '$TS_FOLLOWERS'" ;;
    esac
    end_every "$TS_FOLLOWERS"
    _cr_token="trainsonnet-end-${TS_END_TOKEN:-job}"
    [ -z "$_cr_watch" ] || need getent "--watch resolves $_cr_watch with it"
    if [ -n "$_cr_tcp" ]; then
        tcp_tool || die 127 "--wait-tcp needs python3, bash or nc (with -z) in PATH to try TCP ports; none found"
        _cr_f=${TMPDIR:-/tmp}/trainsonnet-wait.$$
        # shellcheck disable=SC2086 # endpoints have no blanks: split on purpose
        printf '%s\n' $_cr_tcp | awk '!seen[$0]++' >"$_cr_f" || die 1 "cannot write $_cr_f (TMPDIR)"
        WAIT_PORT='' _cr_probe=sweep
        [ "$TCP_TOOL" = python3 ] || _cr_probe=tcp_probe
        wait_all endpoint "over TCP" "$_cr_probe" "$_cr_f"
        _cr_rc=$?
        rm -f "$_cr_f" "$_cr_f.ok" "$_cr_f.pending"
        [ "$_cr_rc" = 0 ] || exit 124
    fi
    watch_init "$_cr_watch" "$TS_WATCH_GRACE" "${_cr_pods:-$TS_FOLLOWERS}" "$END_EVERY"
    if [ -n "$_cr_hear" ]; then
        if banner_tool; then
            WATCH_OUT=$END_FILE.addr
        else
            log "warning: no bash, python3, nc or ssh to read $_cr_watch's port $_cr_hear with; only its going away ends $1"
            _cr_hear=''
        fi
    fi
    _cr_serve=''
    [ -z "$_cr_tell" ] || { py_end && _cr_serve=python3 || _cr_serve=none; }
    tier_line "${_cr_tcp:+$TCP_TOOL}" "$_cr_serve" "${_cr_hear:+$BANNER_TOOL}" "${_cr_watch:+getent}"
    log "running $*"
    start_child "$1" "$@"
    if [ -n "$_cr_group" ]; then
        log "watching $_cr_watch: $1 stops once a pod of the group of $GROUP_SIZE ($_cr_group) is made again"
    elif [ -n "$_cr_hear" ]; then
        log "watching $_cr_watch: $1 stops once it says on its port $_cr_hear that the job is over (read every ${END_EVERY}s with $BANNER_TOOL), or once it has not resolved for ${TS_WATCH_GRACE}s"
    elif [ -n "$_cr_watch" ]; then
        log "watching $_cr_watch: $1 stops once it has not resolved for ${TS_WATCH_GRACE}s"
    fi
    while [ -n "$_cr_watch" ] && kill -0 "$CHILD_PID" 2>/dev/null; do
        watch_check
        [ -z "$_cr_group" ] || [ "$WATCH" != gone ] || GROUP_WHY="$_cr_watch has not resolved for ${TS_WATCH_GRACE}s"
        [ "$WATCH" = ok ] || [ -n "$GROUP_WHY" ] || break
        [ -z "$_cr_group" ] || group_check
        [ -z "$GROUP_WHY" ] || group_end "$1"
        if [ -n "$_cr_hear" ] && end_heard "$WATCH_ADDR" "$_cr_hear" "$_cr_token"; then
            WATCH=over
            break
        fi
        nap "$TS_POLL_INTERVAL"
    done
    case $WATCH in
    over) log "$_cr_watch says the job is over (its port $_cr_hear); stopping $1" ;;
    gone) log "$_cr_watch has not resolved for ${TS_WATCH_GRACE}s; stopping $1" ;;
    lost) log "$(lost_message "$_cr_watch"); stopping $1" ;;
    never) log "gave up after ${TS_WATCH_TIMEOUT}s waiting for $_cr_watch to resolve; stopping $1" ;;
    esac
    if [ "$WATCH" != ok ]; then
        terminate "$CHILD_PID" "$KILL_AFTER"
        CHILD_PID=''
        [ "$WATCH" = never ] && exit 124
        [ "$WATCH" = lost ] && exit 69
        exit 0
    fi
    wait_child
    _cr_rc=$?
    log "$1 exited with code $_cr_rc"
    [ -z "$GOT_SIGNAL" ] || exit "$GOT_SIGNAL"
    if [ -n "$_cr_tell" ]; then
        if [ "$_cr_rc" != 0 ] && ! ends_on_failure; then
            log "leaving the followers up for a retry of this pod (TS_END_ON_FAILURE=0)"
        else
            # A signal from here on ends the script with CMD's code.
            SIGNAL_EXIT=$_cr_rc
            open_end_port "$_cr_tell" "$_cr_token" "$TS_FOLLOWERS" "follower(s)" ||
                log "the followers stop ${TS_WATCH_GRACE}s after this pod has gone instead"
        fi
    fi
    exit "$_cr_rc"
}

# Set before any trap can look at them.
BOUNDED_PID='' NAP_PID='' CHILD_PID='' CHILD_NAME='' GOT_SIGNAL='' HAVE_TIMEOUT='' LANE_PIDS=''
SWEEP_PID='' SWEEP_WATCH='' LISTEN_PID='' TCP_TOOL='' BANNER_TOOL='' WAIT_PORT=''
END_EVERY=2 END_NEXT=0 END_BY='' END_NONE='' END_FILE=${TMPDIR:-/tmp}/trainsonnet-end.$$ END_SERVER=end_server_python
WATCH=ok WATCH_NAME='' WATCH_ADDR='' WATCH_DB=hosts
GROUP_LEAD='' GROUP_SIZE='' GROUP_BASE='' GROUP_NEXT='' GROUP_AT=0 GROUP_SEEN='' GROUP_NEWS=0 GROUP_WHY=''
TS_CONFIG_DIR=${TS_CONFIG_DIR:-/etc/trainsonnet}
TCP_PY=$TS_CONFIG_DIR/tcp.py

# Run as a command, not sourced by a role script (mpi.sh, s3.sh).
if [ "${0##*/}" = runtime.sh ]; then
    # No pathname expansion: lists are split on blanks on purpose.
    set -f
    case ${1:-} in
    run) shift && cmd_run "$@" ;;
    '') usage_error "missing subcommand" ;;
    *) usage_error "unknown subcommand '$1'" ;;
    esac
fi

# shellcheck shell=bash
# The test harness's one shell library: progress lines, errors, elapsed time,
# and the records of the processes the harness starts (identified by PID,
# start time and binary, so a reused PID is never signalled). Sourced by
# test/cluster/common.sh and test/node/lib.sh, never executed. Messages are
# prefixed with $TS_NAME; records live in $TS_PIDS.

TS_T0="${TS_T0:-$(date +%s.%N)}"

# ts_log prints a progress line to stderr, prefixed with the script name.
ts_log() { printf '%s: %s\n' "${TS_NAME:-trainsonnet}" "$*" >&2; }

# ts_die prints one error line to stderr and exits non-zero.
ts_die() { printf '%s: error: %s\n' "${TS_NAME:-trainsonnet}" "$*" >&2; exit 1; }

# ts_since prints the seconds elapsed since $1 (default: script start).
ts_since() { awk -v a="${1:-$TS_T0}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

# ts_retry BOUND WHAT CMD...: runs CMD until it succeeds, for at most
# BOUND seconds, waiting 1, 2, 4, then 5 s between tries: a loaded
# machine's API server answers late, or not at all for a moment, and a
# harness must not fail for that. CMD's standard output passes through
# from the try that succeeded; on the last failure, its output is shown
# and the step dies naming WHAT and how long it tried.
ts_retry() {
  local bound="$1" what="$2" deadline out err delay=1 tries=0
  shift 2
  deadline=$(($(date +%s) + bound))
  err="$(mktemp "${TMPDIR:-/tmp}/ts-retry.XXXXXX")"
  while :; do
    tries=$((tries + 1))
    if out="$("$@" 2>"$err")"; then
      rm -f "$err"
      [ -z "$out" ] || printf '%s\n' "$out"
      return 0
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      [ -z "$out" ] || printf '%s\n' "$out" >&2
      cat "$err" >&2
      rm -f "$err"
      ts_die "$what: failed $tries times within ${bound}s: $*"
    fi
    sleep "$delay"
    delay=$((delay < 4 ? delay * 2 : 5))
  done
}

# ------------------------------------------------------------ process records
# The up.sh scripts record every process they start in $TS_PIDS/<name>.pid
# (the library that sources this one sets TS_PIDS) as one line
# "PID STARTTIME EXE": STARTTIME is field 22 of /proc/PID/stat (clock
# ticks since boot), which together with the PID identifies the process even
# if the PID is later reused; EXE is the binary it runs.

# ts_starttime PID: prints the start time of PID, or fails if PID is gone or
# a zombie (a zombie has exited; it only waits to be reaped by its parent).
ts_starttime() {
  local stat rest
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  rest="${stat##*) }"                 # drop "PID (comm) ": comm may hold spaces
  # shellcheck disable=SC2086
  set -- $rest                        # $1 = state (field 3), $20 = starttime (field 22)
  [ "$1" != Z ] || return 1
  printf '%s\n' "${20}"
}

# ts_record NAME PID EXE: writes the process record for NAME.
ts_record() {
  local st
  st="$(ts_starttime "$2")" || return 1
  printf '%s %s %s\n' "$2" "$st" "$3" >"$TS_PIDS/$1.pid"
}

# ts_recorded_pid NAME: prints the PID recorded for NAME if that very process
# (same PID, same start time, same binary) is still alive; fails otherwise.
ts_recorded_pid() {
  local f="$TS_PIDS/$1.pid" pid st exe cur_exe
  [ -f "$f" ] || return 1
  read -r pid st exe <"$f" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ "$(ts_starttime "$pid")" = "$st" ] || return 1
  cur_exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
  [ "${cur_exe% (deleted)}" = "$exe" ] || return 1
  printf '%s\n' "$pid"
}

# ts_port_in_use PORT: succeeds if something accepts TCP connections on
# 127.0.0.1:PORT (a listener on 0.0.0.0 counts too).
ts_port_in_use() {
  timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# ts_stop NAME...: stops the recorded processes of the named components. All
# get SIGTERM at once (each needs 1.5-3 s to exit), then up to
# TRAINSONNET_STOP_TIMEOUT seconds (default 20) to exit, then SIGKILL. Only a
# process that is still the one recorded is signalled (PID reuse), and a
# record is removed once its process is gone. Fails if something survives.
ts_stop() {
  local name pid f deadline alive=() left=()
  for name in "$@"; do
    f="$TS_PIDS/$name.pid"
    [ -f "$f" ] || continue
    if pid="$(ts_recorded_pid "$name")"; then
      ts_log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      alive+=("$name")
    else
      ts_log "$name: not running (stale record removed)"
      rm -f "$f"
    fi
  done
  [ "${#alive[@]}" -gt 0 ] || return 0
  deadline=$(($(date +%s) + ${TRAINSONNET_STOP_TIMEOUT:-20}))
  while :; do
    left=()
    for name in "${alive[@]}"; do
      if ts_recorded_pid "$name" >/dev/null; then left+=("$name"); else rm -f "$TS_PIDS/$name.pid"; fi
    done
    [ "${#left[@]}" -gt 0 ] || return 0
    [ "$(date +%s)" -lt "$deadline" ] || break
    alive=("${left[@]}")
    sleep 0.1
  done
  for name in "${left[@]}"; do
    if pid="$(ts_recorded_pid "$name")"; then
      ts_log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  sleep 1
  local failed=0
  for name in "${left[@]}"; do
    if pid="$(ts_recorded_pid "$name")"; then
      ts_log "$name (pid $pid) is still alive after SIGKILL"
      failed=1
    else
      rm -f "$TS_PIDS/$name.pid"
    fi
  done
  return "$failed"
}

# ts_restart NAME LOG DOWN: stops the recorded process NAME (ts_stop), waits
# DOWN seconds, and starts it again as it ran: the same binary, arguments,
# environment and working directory, in a session of its own, its output
# appended to LOG; then records it anew. For the fault tests: a kubelet, a
# containerd or an API server that restarts under a running job.
ts_restart() {
  local name="$1" log="$2" down="$3" pid exe cwd argv=() envv=()
  pid="$(ts_recorded_pid "$name")" || ts_die "$name is not running"
  read -r _ _ exe <"$TS_PIDS/$name.pid"
  mapfile -d '' argv <"/proc/$pid/cmdline"
  mapfile -d '' envv <"/proc/$pid/environ"
  cwd="$(readlink "/proc/$pid/cwd")"
  ts_stop "$name" || ts_die "$name did not stop"
  sleep "$down"
  (cd "$cwd" && exec setsid env -i "${envv[@]}" "$exe" "${argv[@]:1}" </dev/null >>"$log" 2>&1 8>&- 9>&-) &
  pid=$!
  # setsid and env exec the binary in this very process: wait for that.
  for _ in $(seq 100); do
    if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]; then
      ts_record "$name" "$pid" "$exe" || ts_die "$name exited at once: $(tail -n 5 "$log")"
      ts_log "restarted $name (pid $pid) after ${down}s down"
      return 0
    fi
    sleep 0.02
  done
  ts_die "$name: pid $pid did not become $exe: $(tail -n 5 "$log")"
}

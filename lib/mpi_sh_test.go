package lib_test

// The cases of lib/assets/mpi.sh; the harness is in scripts_test.go.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var mpiCases = []scriptCase{
	{"launcher/exec_runs_after_all_workers_answer", true, launcherRunsExecAfterAllWorkersAnswer},
	{"launcher/leaves_workers_up_for_a_retry", false, launcherLeavesWorkersUpForARetry},
	{"launcher/probes_every_hostfile_entry", true, launcherProbesEveryHostfileEntry},
	{"wait/sets_up_ssh_waits_and_runs_nothing", true, waitSetsUpSSHWaitsAndRunsNothing},
	{"wait/gives_up_on_unreachable_workers", false, waitGivesUpOnUnreachableWorkers},
	{"launcher/excludes_self", false, launcherExcludesSelf},
	{"launcher/home_ssh_config_is_best_effort", false, launcherHomeSSHConfigIsBestEffort},
	{"launcher/waits_for_late_worker", false, launcherWaitsForLateWorker},
	{"launcher/gives_up_on_unreachable_workers", true, launcherGivesUpOnUnreachableWorkers},
	{"launcher/retries_a_failed_stop", false, launcherRetriesAFailedStop},
	{"launcher/gives_up_when_ssh_hangs", true, launcherGivesUpWhenSSHHangs(false)},
	{"launcher/gives_up_when_ssh_hangs_without_timeout", true, launcherGivesUpWhenSSHHangs(true)},
	{"launcher/interactive_mode_exits_0_on_SIGTERM", true, launcherInteractiveModeExitsZeroOnSIGTERM},
	{"launcher/passes_SIGTERM_on_and_leaves_workers", true, launcherPassesSIGTERMOnAndLeavesWorkers},
	{"launcher/exits_143_on_SIGTERM_while_waiting", true, launcherExits143OnSIGTERMWhileWaiting},
	{"indexed/index_0_launches_and_tells_no_end", false, indexedLaunchesAndTellsNoEnd},
	{"indexed/a_worker_hears_no_end_and_waits_for_the_job_controller", false, indexedWorkerWaitsForTheJobController},
	{"indexed/a_worker_is_lost_only_when_cut_off", false, indexedWorkerIsLostWhenCutOff},
	{"worker/serves_ssh_until_stop_file", true, workerServesSSHUntilStopFile},
	{"worker/restart_in_same_pod", false, workerRestartInSamePod},
	{"worker/ssh_sessions_get_TS_SSH_ENV", true, workerSSHSessionsGetEnv},
	{"worker/gives_up_when_launcher_never_resolves", false, workerGivesUpWhenLauncherNeverResolves},
	{"worker/exits_when_launcher_disappears", false, workerExitsWhenLauncherDisappears},
	{"worker/fails_when_cut_off", false, workerFailsWhenCutOff},
	{"worker/fails_when_cut_off_before_the_grace", false, workerFailsWhenCutOffBeforeTheGrace},
	{"worker/outlives_the_launcher_with_grace_0", false, workerOutlivesTheLauncherWithGraceZero},
	{"worker/fails_when_sshd_dies", true, workerFailsWhenSSHDDies},
	{"worker/exits_143_on_SIGTERM", true, workerExits143OnSIGTERM},
	{"worker/without_getent_relies_on_stop_file", false, workerWithoutGetentReliesOnStopFile},
	{"worker/waits_for_gpu_driver", false, workerWaitsForGPUDriver},
	{"worker/gpu_driver_present", false, workerGPUDriverPresent},
	{"worker/gives_up_waiting_for_gpu_driver", false, workerGivesUpWaitingForGPUDriver},
	{"sshd/creates_privsep_dir_sshd_asks_for", false, sshdPrivsepDirCreated},
	{"sshd/reports_rejected_config", false, sshdConfigRejected},
	{"usage_and_configuration_errors", true, usageAndConfigurationErrors},
}

// TestMPIScript runs the cases of mpi.sh (launcher, worker).
func TestMPIScript(t *testing.T) {
	t.Parallel()
	runCases(t, mpiCases)
}

// ------------------------------------------------------------- launcher

func launcherRunsExecAfterAllWorkersAnswer(t *testing.T, f *fixture) {
	f.env["TS_EXEC"] = `echo "exec ran" > "$TS_RUN_DIR/exec.out"; exit 3`
	code, p := f.run("launcher")
	out := p.output()
	assert.Equal(t, 3, code, out)
	assert.Equal(t, "exec ran\n", readFile(t, filepath.Join(f.runDir, "exec.out")))
	assert.Contains(t, out, "trainsonnet: waiting up to 300s for 2 workers")
	assert.Contains(t, out, "trainsonnet: all 2 workers reachable after ")
	assert.Contains(t, out, "trainsonnet: tiers: wait=ssh serve-end=ssh hear-end=- watch=-\n", "no TCP tool: an ssh login per worker; TS_STOP_PORT=0: stop files")
	assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith("true"))
	assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith(f.stopCommand()), "every worker told to stop")
	for _, c := range f.sshCalls() {
		assert.True(t, c.n, "ssh without -n: %+v", c)
		assert.Equal(t, filepath.Join(f.cfg, "ssh_config"), c.config, "the rendered client config")
	}
	messagesArePrefixed(t, out)

	// ssh setup
	sshDir := filepath.Join(f.runDir, "ssh")
	assert.Equal(t, os.FileMode(0o700), mode(t, sshDir))
	assert.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(sshDir, "id")))
	assert.True(t, strings.HasSuffix(readFile(t, filepath.Join(sshDir, "id")), "-----END OPENSSH PRIVATE KEY-----\n"),
		"private key copy ends with a newline")
	assert.Equal(t, "ssh-ed25519 AAAAC3fake trainsonnet\n", readFile(t, filepath.Join(sshDir, "authorized_keys")))
	assert.Equal(t, "ssh-ed25519 AAAAC3fake trainsonnet\n", readFile(t, filepath.Join(sshDir, "id.pub")))
	assert.Equal(t, "Include "+filepath.Join(f.cfg, "ssh_config")+"\n", readFile(t, filepath.Join(f.home, ".ssh", "config")))
	assert.Empty(t, f.lines("sshd.log"), "no sshd without TS_SELF")
}

// With retries of the launcher pod (backoffLimit > 0), a failed exec must
// not stop the workers: the next attempt needs them. Success still does.
// (TS_STOP_WORKERS_ON_FAILURE is the older name of TS_END_ON_FAILURE.)
func launcherLeavesWorkersUpForARetry(t *testing.T, f *fixture) {
	f.env["TS_EXEC"] = "exit 3"
	for _, name := range []string{"TS_END_ON_FAILURE", "TS_STOP_WORKERS_ON_FAILURE"} {
		f.env[name] = "0"
		code, p := f.run("launcher")
		assert.Equal(t, 3, code, p.output())
		assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "%s=0: no worker told to stop", name)
		assert.Contains(t, p.output(), "trainsonnet: leaving the workers up for a retry of the launcher")
		delete(f.env, name)
	}

	f.env["TS_END_ON_FAILURE"] = "0"
	f.env["TS_EXEC"] = "exit 0"
	code, p := f.run("launcher")
	assert.Equal(t, 0, code, p.output())
	assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith(f.stopCommand()), "success stops the workers")
}

// wait: the init container of a launcher whose image's ENTRYPOINT runs
// unwrapped does the launcher's set-up and wait alone: the key copies
// are left in the run dir (the ENTRYPOINT's mpirun reads them through
// ssh_config), no TS_EXEC runs and no worker is told anything.
func waitSetsUpSSHWaitsAndRunsNothing(t *testing.T, f *fixture) {
	f.env["TS_EXEC"] = `echo ran > "$TS_RUN_DIR/exec.out"`
	code, p := f.run("wait")
	out := p.output()
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "trainsonnet: all 2 workers reachable after ")
	assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith("true"))
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "no worker told to stop")
	assert.NoFileExists(t, filepath.Join(f.runDir, "exec.out"), "TS_EXEC is not run")
	assert.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(f.runDir, "ssh", "id")), "the key copy stays for the ENTRYPOINT")
	messagesArePrefixed(t, out)
}

// A wait that fails fails the init container, with the launcher's code.
func waitGivesUpOnUnreachableWorkers(t *testing.T, f *fixture) {
	f.env["TS_INIT_TIMEOUT"] = "1"
	f.env["TS_END_BY"] = "job"
	f.host(worker1, "down")
	code, p := f.run("wait")
	assert.Equal(t, 124, code, p.output())
	assert.Contains(t, p.output(), worker1)
}

func launcherProbesEveryHostfileEntry(t *testing.T, f *fixture) {
	// Comments, blank lines, indentation, a duplicate and no final
	// newline. The ssh stub eats stdin without -n (pitfall 13).
	f.hostfile("# generated\n\n" + worker0 + " slots=1\n   \n  " + worker1 + "   slots=1\n" +
		"#train-worker-9.train slots=1\n" + worker0 + " slots=1\ntrain-worker-2.train slots=1")
	f.env["TS_EXEC"] = "true"
	f.env["TS_SSH_PORT"] = "2222"
	code, p := f.run("launcher")
	require.Equal(t, 0, code, p.output())
	hosts := []string{worker0, worker1, "train-worker-2.train"}
	assert.Equal(t, hosts, f.hostsCalledWith("true"))
	assert.Equal(t, hosts, f.hostsCalledWith(f.stopCommand()))
	assert.Len(t, f.sshCalls(), 6, "one probe and one stop per distinct host")
	for _, c := range f.sshCalls() {
		assert.True(t, c.n, "ssh without -n: %+v", c)
	}
	assert.Contains(t, p.output(), "for 3 workers to answer over ssh on port 2222")
}

func launcherExcludesSelf(t *testing.T, f *fixture) {
	f.hostfile(launcher + " slots=1\n" + worker0 + " slots=1\n")
	f.env["TS_SELF"] = launcher
	f.env["TS_EXEC"] = "exit 0"
	f.host(launcher, "down") // would fail the wait if it were probed
	code, p := f.run("launcher")
	require.Equal(t, 0, code, p.output())
	assert.Equal(t, []string{worker0}, f.hostsCalledWith("true"))
	assert.Equal(t, []string{worker0}, f.hostsCalledWith(f.stopCommand()))
	for _, c := range f.sshCalls() {
		assert.NotEqual(t, launcher, c.host)
	}
	assert.Contains(t, p.output(), "for 1 worker to answer")
	// It is a rank: it served ssh, and stopped sshd when done.
	log := strings.Join(f.lines("sshd.log"), "\n")
	assert.Contains(t, log, "test ")
	assert.Contains(t, log, "start ")
	assert.Contains(t, log, "stopped ")
}

func launcherHomeSSHConfigIsBestEffort(t *testing.T, f *fixture) {
	f.env["TS_EXEC"] = "true"
	// ~/.ssh cannot be created (a file is in the way; root ignores modes).
	dotSSH := filepath.Join(f.home, ".ssh")
	f.touch(dotSSH)
	code, p := f.run("launcher")
	require.Equal(t, 0, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: note: could not write "+dotSSH+"/config; use 'ssh -F ")
	// A user's own ~/.ssh/config is left alone.
	require.NoError(t, os.Remove(dotSSH))
	require.NoError(t, os.Mkdir(dotSSH, 0o700))
	f.write(filepath.Join(dotSSH, "config"), "Host mine\n", 0o600)
	code, p = f.run("launcher")
	require.Equal(t, 0, code, p.output())
	assert.Equal(t, "Host mine\n", readFile(t, filepath.Join(dotSSH, "config")))
	assert.NotContains(t, p.output(), "note:")
	// Unset or missing HOME: nothing to do, nothing said.
	f.env["HOME"] = filepath.Join(f.home, "missing")
	code, p = f.run("launcher")
	require.Equal(t, 0, code, p.output())
	assert.NotContains(t, p.output(), "note:")
}

func launcherWaitsForLateWorker(t *testing.T, f *fixture) {
	f.host(worker1, "fail-first 2")
	f.env["TS_EXEC"] = "exit 0"
	f.env["TS_INIT_TIMEOUT"] = "15"
	code, p := f.run("launcher")
	require.Equal(t, 0, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: all 2 workers reachable after ")
	probes := 0
	for _, c := range f.sshCalls() {
		if c.host == worker1 && c.args == "true" {
			probes++
		}
	}
	assert.Equal(t, 3, probes, "worker 1 probed again until it answered")
}

func launcherGivesUpOnUnreachableWorkers(t *testing.T, f *fixture) {
	f.hostfile(worker0 + " slots=1\n" + worker1 + " slots=1\ntrain-worker-2.train slots=1\n")
	f.host(worker1, "down")
	f.host("train-worker-2.train", "down")
	f.env["TS_INIT_TIMEOUT"] = "2"
	f.env["TS_EXEC"] = `touch "$TS_RUN_DIR/exec-ran"`
	code, p, waited := f.runTimed("waiting up to 2s", "launcher")
	out := p.output()
	require.Equal(t, 124, code, out)
	assert.Less(t, waited, 2*time.Second+slack)
	assert.Equal(t, []string{worker1, "train-worker-2.train"}, missingHosts(t, out))
	assert.Contains(t, out, "trainsonnet: gave up after 2s waiting for workers; not reachable over ssh on port 2022: ")
	assert.NoFileExists(t, filepath.Join(f.runDir, "exec-ran"))
	assert.Equal(t, []string{worker0}, f.hostsCalledWith(f.stopCommand()), "the worker that answered is told to stop")
}

// launcherRetriesAFailedStop: a worker whose "please stop" call fails is
// tried once more, and one that fails twice is named in the log.
func launcherRetriesAFailedStop(t *testing.T, f *fixture) {
	// Once every worker has answered, exec makes the next ssh call to
	// worker0 fail once and every call to worker1 fail.
	f.env["TS_EXEC"] = `echo "fail-first 1" > "$STUB_DIR/hosts/` + worker0 + `"; echo down > "$STUB_DIR/hosts/` + worker1 + `"`
	code, p := f.run("launcher")
	out := p.output()
	require.Equal(t, 0, code, out)
	var stops []string
	for _, c := range f.sshCalls() {
		if c.args == f.stopCommand() {
			stops = append(stops, c.host)
		}
	}
	slices.Sort(stops)
	assert.Equal(t, []string{worker0, worker0, worker1, worker1}, stops, "each failed stop tried twice")
	refused := func(host string) string {
		return "ssh exit code 255: ssh: connect to host " + host + " port 2022: Connection refused"
	}
	// What ssh said on each try, for the one who reads the log.
	assert.Contains(t, out, "trainsonnet: told "+worker0+" to stop on a second try (first try: "+refused(worker0)+")")
	assert.Contains(t, out, "trainsonnet: could not tell "+worker1+" to stop ("+refused(worker1)+"; first try: "+refused(worker1)+"); it stops once the launcher is gone")
}

// launcherGivesUpWhenSSHHangs: a probe that never returns still ends at
// the bound, with timeout(1) and with the POSIX sh fallback.
func launcherGivesUpWhenSSHHangs(noTimeout bool) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		if noTimeout {
			f.without("timeout")
		}
		f.host(worker1, "hang")
		// 4 s, not 2: on a loaded machine the shell's start-up took the
		// whole of 2 s, and it gave up before trying worker0 at all.
		f.env["TS_INIT_TIMEOUT"] = "4"
		f.env["TS_EXEC"] = "true"
		code, p, waited := f.runTimed("waiting up to 4s", "launcher")
		require.Equal(t, 124, code, p.output())
		assert.Less(t, waited, 4*time.Second+slack)
		assert.Equal(t, []string{worker1}, missingHosts(t, p.output()))
	}
}

func launcherInteractiveModeExitsZeroOnSIGTERM(t *testing.T, f *fixture) {
	f.env["TS_EXEC"] = ""
	p := f.start("launcher")
	p.waitForOutput("interactive mode")
	time.Sleep(100 * time.Millisecond)
	assert.False(t, p.exited(), "stays up")
	p.signal(syscall.SIGTERM)
	assert.Equal(t, 0, p.wait(), p.output())
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()))
}

func launcherPassesSIGTERMOnAndLeavesWorkers(t *testing.T, f *fixture) {
	f.env["TS_EXEC"] = `trap 'echo got-term > "$TS_RUN_DIR/exec-term"; exit 7' TERM; ` +
		`touch "$TS_RUN_DIR/exec-ready"; while :; do sleep 1; done`
	p := f.start("launcher")
	p.waitFor("TS_EXEC running", func() bool {
		_, err := os.Stat(filepath.Join(f.runDir, "exec-ready"))
		return err == nil
	})
	p.signal(syscall.SIGTERM)
	assert.Equal(t, 143, p.wait(), p.output())
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "exec-term")), "TS_EXEC got SIGTERM")
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "workers stop by themselves when the launcher pod goes")
}

func launcherExits143OnSIGTERMWhileWaiting(t *testing.T, f *fixture) {
	f.host(worker1, "hang")
	f.env["TS_INIT_TIMEOUT"] = "60"
	f.env["TS_EXEC"] = `touch "$TS_RUN_DIR/exec-ran"`
	p := f.start("launcher")
	p.waitFor("worker 1 probed", func() bool { return slices.Contains(f.hostsCalledWith("true"), worker1) })
	p.signal(syscall.SIGTERM)
	signalled := time.Now()
	require.Equal(t, 143, p.wait(), p.output())
	assert.Less(t, time.Since(signalled), slack, "not after the probe's own bound")
	assert.NoFileExists(t, filepath.Join(f.runDir, "exec-ran"))
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()))
}

// ---------------------------------------------------------------- worker

func workerServesSSHUntilStopFile(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	p := f.start("worker")
	p.waitFor("sshd started", func() bool { return len(f.lines("sshd.log")) >= 2 })
	time.Sleep(200 * time.Millisecond)
	require.False(t, p.exited(), p.output())
	f.touch(filepath.Join(f.runDir, "stop"))
	require.Equal(t, 0, p.wait(), p.output())
	assert.Contains(t, p.output(), "trainsonnet: the launcher asked us to stop")
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
	assert.Contains(t, strings.Join(f.lines("sshd.log"), "\n"), "stopped ", "sshd stopped")

	ssh := filepath.Join(f.runDir, "ssh")
	assert.Equal(t, readFile(t, filepath.Join(f.cfg, "sshd_config")), readFile(t, filepath.Join(f.stub, "sshd_config")),
		"sshd got the rendered config")
	assert.NotContains(t, strings.Join(f.lines("sshd.log"), "\n"), "ForceCommand", "no session script without TS_SSH_ENV")
	keygen := f.lines("ssh-keygen.log")
	require.Len(t, keygen, 1)
	assert.Contains(t, keygen[0], "-t ed25519")
	assert.Contains(t, keygen[0], "-f "+filepath.Join(ssh, "ssh_host_ed25519_key"))
	assert.Equal(t, os.FileMode(0o700), mode(t, ssh))
	assert.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(ssh, "id")))
	assert.Equal(t, os.FileMode(0o600), mode(t, filepath.Join(ssh, "authorized_keys")))
	messagesArePrefixed(t, p.output())
}

// workerSSHSessionsGetEnv: sshd hands sessions a fresh environment, so
// with TS_SSH_ENV the worker writes a session script that sshd runs for
// every session (ForceCommand): it exports the named variables with the
// pod's values (quotes, $ and newlines kept; unset ones stay unset) and
// runs the client's command with the user's shell. The script is run here
// the way sshd runs it, in an environment without the pod's variables.
func workerSSHSessionsGetEnv(t *testing.T, f *fixture) {
	const value = "it's \"quoted\" $HOME `x` \\n\nsecond line"
	f.env["NCCL_DEBUG"] = value
	f.env["EMPTY"] = ""
	f.env["DASH-NAME"] = "x" // valid in Kubernetes, not in sh
	f.env["TS_SSH_ENV"] = "NCCL_DEBUG DASH-NAME EMPTY NOT_SET"
	f.resolvable(launcher, true)
	p := f.start("worker")
	p.waitFor("sshd started", func() bool { return len(f.lines("sshd.log")) >= 2 })

	session := filepath.Join(f.runDir, "ssh", "session")
	assert.Contains(t, f.lines("sshd.log")[1], " -o ForceCommand=sh "+session, "on sshd's command line: per pod")
	assert.Equal(t, os.FileMode(0o600), mode(t, session), "the values may be secret")
	run := func(command string) string {
		cmd := exec.Command(f.sh.argv[0], append(slices.Clone(f.sh.argv[1:]), "-c", "sh "+session)...)
		cmd.Env = []string{"PATH=" + f.bin, "HOME=" + f.home, "SHELL=/bin/sh", "SSH_ORIGINAL_COMMAND=" + command}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	assert.Equal(t, value, run(`printf '%s' "$NCCL_DEBUG"`))
	assert.Equal(t, "set:", run(`printf 'set:%s' "${EMPTY-unset}"`))
	assert.Equal(t, "unset", run(`printf '%s' "${NOT_SET-unset}"`))
	assert.Equal(t, "a b\n", run(`echo "$@" a b`), "the command runs as given, with the user's shell")
	assert.NotContains(t, readFile(t, session), "DASH-NAME")
	assert.Contains(t, p.output(), "trainsonnet: note: ssh sessions do not get DASH-NAME: not a shell variable name\n")

	f.touch(filepath.Join(f.runDir, "stop"))
	require.Equal(t, 0, p.wait(), p.output())
}

func workerRestartInSamePod(t *testing.T, f *fixture) {
	// A second run over the first one's read-only key copies and host
	// key; a stop file left by the first run ends it at once.
	f.resolvable(launcher, true)
	f.touch(filepath.Join(f.runDir, "stop"))
	for i := range 2 {
		code, p := f.run("worker")
		require.Equal(t, 0, code, "run %d: %s", i, p.output())
		require.NoError(t, os.Chmod(filepath.Join(f.runDir, "ssh", "id"), 0o400))
	}
}

func workerGivesUpWhenLauncherNeverResolves(t *testing.T, f *fixture) {
	f.env["TS_INIT_TIMEOUT"] = "2"
	code, p, waited := f.runTimed("trainsonnet: launcher watchdog: ", "worker")
	require.Equal(t, 124, code, p.output())
	assert.Less(t, waited, 2*time.Second+slack)
	assert.Contains(t, p.output(), "trainsonnet: gave up after 2s waiting for the launcher: "+launcher+" never resolved")
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
	assert.Contains(t, strings.Join(f.lines("sshd.log"), "\n"), "stopped ", "sshd stopped")
}

func workerExitsWhenLauncherDisappears(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["TS_LAUNCHER_GRACE"] = "1"
	f.env["TS_INIT_TIMEOUT"] = "2" // must not matter once resolved
	p := f.start("worker")
	p.waitFor("a successful lookup", func() bool {
		return slices.Contains(f.lines("getent.log"), launcher+" found")
	})
	time.Sleep(2500 * time.Millisecond) // past TS_INIT_TIMEOUT: still running
	require.False(t, p.exited(), p.output())
	f.resolvable(launcher, false)
	gone := time.Now()
	require.Equal(t, 0, p.wait(), p.output())
	assert.Less(t, time.Since(gone), 1*time.Second+slack)
	assert.Contains(t, p.output(), "trainsonnet: launcher "+launcher+" has not resolved for 1s; assuming the job ended")
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
}

// A worker whose network is cut loses the launcher's name and every other
// one: it exits 69 (its Job replaces it, for the launcher's next attempt),
// not 0, which would leave its index done and the next attempt waiting for
// it in vain (seen on the real node: test/jobs TestFaults).
func workerFailsWhenCutOff(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["TS_LAUNCHER_GRACE"] = "1"
	p := f.start("worker")
	p.waitFor("a successful lookup", func() bool {
		return slices.Contains(f.lines("getent.log"), launcher+" found")
	})
	f.resolvable(launcher, false)
	f.resolvable(dnsProbe, false)
	require.Equal(t, 69, p.wait(), p.output())
	assert.Regexp(t, "trainsonnet: launcher "+regexp.QuoteMeta(launcher)+" has not resolved for [12]s, and neither has "+regexp.QuoteMeta(dnsProbe)+
		regexp.QuoteMeta(": this pod has lost the cluster's DNS (its network cut off?), not "+launcher+"; exiting 69 so that its Job replaces it"), p.output())
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
}

// ...and it does so once the launcher has not resolved for TS_LOST_GRACE,
// not the 7 minutes of TS_LAUNCHER_GRACE a retried launcher has: the
// launcher's next attempt finds a fresh worker in its place.
func workerFailsWhenCutOffBeforeTheGrace(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["TS_LAUNCHER_GRACE"] = "420"
	f.env["TS_LOST_GRACE"] = "2"
	p := f.start("worker")
	p.waitFor("a successful lookup", func() bool {
		return slices.Contains(f.lines("getent.log"), launcher+" found")
	})
	f.resolvable(launcher, false)
	f.resolvable(dnsProbe, false)
	cut := time.Now()
	require.Equal(t, 69, p.wait(), p.output())
	assert.Less(t, time.Since(cut), 3*time.Second+slack, "TS_LOST_GRACE, not TS_LAUNCHER_GRACE")
	assert.Contains(t, p.output(), "and neither has "+dnsProbe+": this pod has lost the cluster's DNS")
}

// TS_LAUNCHER_GRACE=0 (horovod-dask's interactive cluster): the worker
// neither gives up on a launcher that never came nor stops when it goes;
// the stop file still ends it.
func workerOutlivesTheLauncherWithGraceZero(t *testing.T, f *fixture) {
	f.env["TS_LAUNCHER_GRACE"] = "0"
	f.env["TS_INIT_TIMEOUT"] = "1"
	p := f.start("worker")
	p.waitForOutput("trainsonnet: launcher watchdog off (TS_LAUNCHER_GRACE=0)")
	time.Sleep(2500 * time.Millisecond) // past TS_INIT_TIMEOUT, never resolved
	require.False(t, p.exited(), p.output())
	f.resolvable(launcher, true)
	time.Sleep(1500 * time.Millisecond)
	f.resolvable(launcher, false)
	time.Sleep(1500 * time.Millisecond) // gone: still serving
	require.False(t, p.exited(), p.output())
	assert.Empty(t, f.lines("getent.log"), "no DNS queries without a watchdog")
	require.NoError(t, os.WriteFile(filepath.Join(f.runDir, "stop"), nil, 0o644))
	require.Equal(t, 0, p.wait(), p.output())
}

func workerFailsWhenSSHDDies(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["STUB_SSHD_DIE_AFTER"] = "1"
	code, p := f.run("worker")
	require.Equal(t, 1, code, p.output())
	assert.Regexp(t, `(?m)^trainsonnet: sshd \(pid \d+\) exited unexpectedly`, p.output())
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
}

// The launcher as worker 0 (openmpi --launcher-as-worker): index 0 of the
// Indexed Job runs the launcher, waits for the others, runs TS_EXEC and
// exits with its code, telling no worker (TS_END_BY=job: the Job
// controller ends the job, and stops the workers, itself), even when the
// wait fails.
func indexedLaunchesAndTellsNoEnd(t *testing.T, f *fixture) {
	f.env["JOB_COMPLETION_INDEX"] = "0"
	f.env["TS_END_BY"] = "job"
	f.env["TS_EXEC"] = "exit 0"
	code, p := f.run("indexed")
	out := p.output()
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "trainsonnet: tiers: wait=ssh serve-end=job hear-end=- watch=-\n")
	assert.Contains(t, out, "trainsonnet: all 2 workers reachable after ")
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "no worker told to stop")
	assert.NotContains(t, out, "the job is over")

	f.env["TS_EXEC"] = "exit 5"
	code, p = f.run("indexed")
	require.Equal(t, 5, code, p.output())
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "a failure tells none either: the Job retries index 0")
}

// ...and every other index runs a worker that neither reads an end port
// nor writes one: it serves until the Job controller's SIGTERM.
func indexedWorkerWaitsForTheJobController(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["JOB_COMPLETION_INDEX"] = "1"
	f.env["TS_END_BY"] = "job"
	f.env["TS_STOP_PORT"] = "2023"
	f.env["TS_LAUNCHER_GRACE"] = "1"
	p := f.start("indexed")
	p.waitForOutput("trainsonnet: tiers: wait=- serve-end=- hear-end=- watch=getent\n")
	p.waitFor("sshd started", func() bool { return len(f.lines("sshd.log")) >= 2 })
	// worker 0 gone (retried) ends nothing, whatever the grace: the Job
	// controller ends the job
	f.resolvable(launcher, false)
	time.Sleep(3 * time.Second)
	require.False(t, p.exited(), p.output())
	p.signal(syscall.SIGTERM)
	require.Equal(t, 143, p.wait(), p.output())
	assert.NotContains(t, p.output(), "port 2023", "no end port read")
	assert.Contains(t, p.output(), "trainsonnet: the Job controller ends the job; "+launcher+" is asked every 1s only to learn whether this pod is cut off")
}

// ...unless it resolves nothing at all: then it is cut off, 69.
func indexedWorkerIsLostWhenCutOff(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["JOB_COMPLETION_INDEX"] = "1"
	f.env["TS_END_BY"] = "job"
	f.env["TS_LOST_GRACE"] = "1"
	p := f.start("indexed")
	p.waitForOutput("trainsonnet: " + launcher + " resolves\n")
	f.resolvable(launcher, false)
	f.resolvable(dnsProbe, false)
	require.Equal(t, 69, p.wait(), p.output())
	assert.Contains(t, p.output(), "this pod has lost the cluster's DNS")
}

func workerExits143OnSIGTERM(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	p := f.start("worker")
	p.waitFor("sshd started", func() bool { return len(f.lines("sshd.log")) >= 2 })
	time.Sleep(200 * time.Millisecond)
	p.signal(syscall.SIGTERM)
	signalled := time.Now()
	require.Equal(t, 143, p.wait(), p.output())
	assert.Less(t, time.Since(signalled), slack, "handled while sleeping between checks")
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
	assert.Contains(t, strings.Join(f.lines("sshd.log"), "\n"), "stopped ", "sshd stopped")
}

func workerWithoutGetentReliesOnStopFile(t *testing.T, f *fixture) {
	f.without("getent")
	f.env["TS_INIT_TIMEOUT"] = "1" // would end a watchdog that ran
	p := f.start("worker")
	p.waitForOutput("launcher watchdog disabled")
	time.Sleep(2 * time.Second)
	require.False(t, p.exited(), p.output())
	f.touch(filepath.Join(f.runDir, "stop"))
	require.Equal(t, 0, p.wait(), p.output())
	assert.Equal(t, 1, strings.Count(p.output(), "getent"), "warned once")
	assert.Contains(t, p.output(), "trainsonnet: tiers: wait=- serve-end=- hear-end=- watch=-\n", "the stop file alone")
}

func workerWaitsForGPUDriver(t *testing.T, f *fixture) {
	driver := filepath.Join(f.runDir, "nvidia-version")
	f.resolvable(launcher, true)
	f.env["TS_WAIT_FOR_GPU_DRIVER"] = "1"
	f.env["TS_GPU_DRIVER_FILE"] = driver
	p := f.start("worker")
	p.waitForOutput("waiting up to 300s for the GPU driver (" + driver + ")")
	time.Sleep(500 * time.Millisecond)
	assert.Empty(t, f.lines("sshd.log"), "no sshd before the driver")
	f.touch(driver)
	p.waitFor("sshd started", func() bool { return len(f.lines("sshd.log")) >= 2 })
	f.touch(filepath.Join(f.runDir, "stop"))
	require.Equal(t, 0, p.wait(), p.output())
	assert.Contains(t, p.output(), "trainsonnet: GPU driver ready")
}

func workerGPUDriverPresent(t *testing.T, f *fixture) {
	driver := filepath.Join(f.runDir, "nvidia-version")
	f.touch(driver)
	f.touch(filepath.Join(f.runDir, "stop"))
	f.resolvable(launcher, true)
	f.env["TS_WAIT_FOR_GPU_DRIVER"] = "1"
	f.env["TS_GPU_DRIVER_FILE"] = driver
	code, p := f.run("worker")
	require.Equal(t, 0, code, p.output())
	assert.NotContains(t, p.output(), "GPU driver")
}

func workerGivesUpWaitingForGPUDriver(t *testing.T, f *fixture) {
	driver := filepath.Join(f.runDir, "no-such-driver")
	f.resolvable(launcher, true)
	f.env["TS_WAIT_FOR_GPU_DRIVER"] = "1"
	f.env["TS_GPU_DRIVER_FILE"] = driver
	f.env["TS_INIT_TIMEOUT"] = "2"
	code, p, waited := f.runTimed("waiting up to 2s for the GPU driver", "worker")
	require.Equal(t, 124, code, p.output())
	assert.Less(t, waited, 2*time.Second+slack)
	assert.Contains(t, p.output(), "trainsonnet: gave up after 2s waiting for the GPU driver: "+driver+" does not exist")
	assert.Empty(t, f.lines("sshd.log"), "sshd never started")
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
}

func sshdPrivsepDirCreated(t *testing.T, f *fixture) {
	privsep := filepath.Join(f.runDir, "privsep")
	f.env["STUB_PRIVSEP_DIR"] = privsep
	f.resolvable(launcher, true)
	f.touch(filepath.Join(f.runDir, "stop"))
	code, p := f.run("worker")
	require.Equal(t, 0, code, p.output())
	assert.Equal(t, os.FileMode(0o755), mode(t, privsep))
	assert.Len(t, slices.DeleteFunc(f.lines("sshd.log"), func(l string) bool {
		return !strings.HasPrefix(l, "test ")
	}), 2, "sshd -t once more after that")
}

func sshdConfigRejected(t *testing.T, f *fixture) {
	f.write(filepath.Join(f.stub, "sshd-t-error"), "line 3: Bad configuration option: Frobnicate\n", 0o644)
	f.resolvable(launcher, true)
	code, p := f.run("worker")
	require.Equal(t, 1, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: sshd rejected "+filepath.Join(f.cfg, "sshd_config")+":\n"+
		"line 3: Bad configuration option: Frobnicate\n")
	assert.Empty(t, slices.DeleteFunc(f.lines("sshd.log"), func(l string) bool {
		return !strings.HasPrefix(l, "start ")
	}), "not started")
}

// ----------------------------------------------------- configuration errors

var configErrorCases = []struct {
	name string
	args []string
	env  map[string]string
	want string
}{
	{name: "no subcommand", want: "trainsonnet: missing subcommand\nusage: sh mpi.sh <subcommand>"},
	{name: "unknown subcommand", args: []string{"master"}, want: "trainsonnet: unknown subcommand 'master'"},
	{name: "worker without launcher", args: []string{"worker"}, env: map[string]string{"TS_LAUNCHER": ""},
		want: "trainsonnet: missing required environment variable TS_LAUNCHER"},
	{name: "bad timeout", args: []string{"launcher"}, env: map[string]string{"TS_INIT_TIMEOUT": "5m"},
		want: "trainsonnet: TS_INIT_TIMEOUT must be a whole number of seconds, got '5m'"},
	{name: "bad grace", args: []string{"worker"}, env: map[string]string{"TS_LAUNCHER_GRACE": "-1"},
		want: "trainsonnet: TS_LAUNCHER_GRACE must be a whole number of seconds, got '-1'"},
	{name: "missing hostfile", args: []string{"launcher"}, env: map[string]string{"TS_HOSTFILE": "/nonexistent/hostfile"},
		want: "trainsonnet: hostfile /nonexistent/hostfile not found or not readable (TS_HOSTFILE)"},
	{name: "missing key", args: []string{"launcher"}, env: map[string]string{"TS_KEY_DIR": "/nonexistent"},
		want: "trainsonnet: no ssh key in /nonexistent (TS_KEY_DIR): the Secret needs the keys ssh-privatekey and ssh-publickey, or id_rsa and id_rsa.pub (and optionally authorized_keys)\n"},
	{name: "download without source", args: []string{"s3-download"}, env: map[string]string{"TS_S3_TO": "/data"},
		want: "trainsonnet: missing required environment variable TS_S3_FROM"},
	{name: "upload without pod name", args: []string{"s3-upload"},
		env:  map[string]string{"TS_S3_FROM": "/out", "TS_S3_TO": "s3://b/x", "TS_NAMESPACE": "ns", "TS_JOB_NAME": "j"},
		want: "trainsonnet: missing required environment variable TS_POD_NAME"},
}

// usageAndConfigurationErrors: exit 2 and one clear line, before any ssh or
// aws call.
func usageAndConfigurationErrors(t *testing.T, f *fixture) {
	for _, c := range configErrorCases {
		for k, v := range c.env {
			f.env[k] = v
		}
		code, p := f.run(c.args...)
		assert.Equal(t, 2, code, "%s: %s", c.name, p.output())
		assert.Contains(t, p.output(), c.want, c.name)
		for k := range c.env {
			delete(f.env, k)
		}
	}
	assert.Empty(t, f.lines("ssh.log"))
	assert.Empty(t, f.lines("aws.log"))
}

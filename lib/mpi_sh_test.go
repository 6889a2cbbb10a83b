package lib_test

// Hermetic tests of lib/assets/mpi.sh, the runtime script of every MPI pod.
// The script runs for real, under /bin/sh (dash on Debian) and, for the
// cases that lean on shell behaviour, also under `busybox sh` and
// `bash --posix` when they are installed. Its PATH holds only
// stubs of ssh, sshd, ssh-keygen, getent and aws (lib/testdata/stubs, driven
// by files in a per-test STUB_DIR) plus links to the few system utilities
// the script may use, so a new dependency shows up as a failure here.
// test/scripts has the real-process counterpart (real sshd and mpirun).

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	mpiScript = "assets/mpi.sh"
	worker0   = "train-worker-0.train"
	worker1   = "train-worker-1.train"
	launcher  = "train-launcher.train"
	// Every test process is killed after this long: a hang fails the test
	// instead of stalling the suite.
	hardLimit = 30 * time.Second
	// Slack allowed on top of a bound before a timeout counts as too late.
	// Generous: these tests check that a bound ends the wait at all (a
	// hanging stub would run for 1000 s), not its precision, and CI may run
	// other packages' tests on the same 2 cores.
	slack = 10 * time.Second
)

// systemTools are the utilities the script (and the stubs) may call besides
// the stubbed ones; `sh` (for TS_EXEC) is linked to the shell under test.
var systemTools = []string{"date", "sleep", "cat", "cp", "chmod", "mkdir", "rm", "touch", "id", "sed", "timeout"}

var stubs = []string{"ssh", "sshd", "ssh-keygen", "getent", "aws"}

// shell is one interpreter the script must work under.
type shell struct {
	name string
	argv []string // runs a script file given as the next argument
	bin  string   // linked as `sh` into the test PATH
}

var (
	shellsOnce sync.Once
	shellList  []shell
)

func shells() []shell {
	shellsOnce.Do(func() {
		shellList = []shell{{name: "sh", argv: []string{"/bin/sh"}, bin: "/bin/sh"}}
		if p, err := exec.LookPath("busybox"); err == nil {
			shellList = append(shellList, shell{name: "busybox", argv: []string{p, "sh"}, bin: p})
		}
		if p, err := exec.LookPath("bash"); err == nil {
			shellList = append(shellList, shell{name: "bash-posix", argv: []string{p, "--posix"}, bin: p})
		}
	})
	return shellList
}

// scriptCases are the behaviours checked.
var scriptCases = []struct {
	name string
	// allShells: also under busybox sh and bash --posix, for the cases that
	// lean on shell behaviour (traps, wait, kill -0 and reaping, read loops,
	// eval, set --); the rest run under /bin/sh only, to keep the suite
	// light on a 2-core machine where every fork is costly.
	allShells bool
	run       func(t *testing.T, f *fixture)
}{
	{"launcher/exec_runs_after_all_workers_answer", true, launcherRunsExecAfterAllWorkersAnswer},
	{"launcher/leaves_workers_up_for_a_retry", false, launcherLeavesWorkersUpForARetry},
	{"launcher/probes_every_hostfile_entry", true, launcherProbesEveryHostfileEntry},
	{"launcher/excludes_self", false, launcherExcludesSelf},
	{"launcher/home_ssh_config_is_best_effort", false, launcherHomeSSHConfigIsBestEffort},
	{"launcher/waits_for_late_worker", false, launcherWaitsForLateWorker},
	{"launcher/gives_up_on_unreachable_workers", true, launcherGivesUpOnUnreachableWorkers},
	{"launcher/gives_up_when_ssh_hangs", true, launcherGivesUpWhenSSHHangs(false)},
	{"launcher/gives_up_when_ssh_hangs_without_timeout", true, launcherGivesUpWhenSSHHangs(true)},
	{"launcher/interactive_mode_exits_0_on_SIGTERM", true, launcherInteractiveModeExitsZeroOnSIGTERM},
	{"launcher/passes_SIGTERM_on_and_leaves_workers", true, launcherPassesSIGTERMOnAndLeavesWorkers},
	{"launcher/exits_143_on_SIGTERM_while_waiting", true, launcherExits143OnSIGTERMWhileWaiting},
	{"worker/serves_ssh_until_stop_file", true, workerServesSSHUntilStopFile},
	{"worker/restart_in_same_pod", false, workerRestartInSamePod},
	{"worker/ssh_sessions_get_TS_SSH_ENV", true, workerSSHSessionsGetEnv},
	{"worker/gives_up_when_launcher_never_resolves", false, workerGivesUpWhenLauncherNeverResolves},
	{"worker/exits_when_launcher_disappears", false, workerExitsWhenLauncherDisappears},
	{"worker/fails_when_sshd_dies", true, workerFailsWhenSSHDDies},
	{"worker/exits_143_on_SIGTERM", true, workerExits143OnSIGTERM},
	{"worker/without_getent_relies_on_stop_file", false, workerWithoutGetentReliesOnStopFile},
	{"worker/waits_for_gpu_driver", false, workerWaitsForGPUDriver},
	{"worker/gpu_driver_present", false, workerGPUDriverPresent},
	{"worker/gives_up_waiting_for_gpu_driver", false, workerGivesUpWaitingForGPUDriver},
	{"sshd/creates_privsep_dir_sshd_asks_for", false, sshdPrivsepDirCreated},
	{"sshd/reports_rejected_config", false, sshdConfigRejected},
	{"s3-upload/waits_for_finished", true, s3UploadWaitsForFinished},
	{"s3-upload/when_launcher_gone", false, s3UploadWhenLauncherGone},
	{"s3-upload/aws_fails", false, s3UploadAWSFails},
	{"s3-upload/nothing_to_upload", false, s3UploadNothingToUpload},
	{"s3-download", false, s3Download},
	{"usage_and_configuration_errors", true, usageAndConfigurationErrors},
}

// maxCases bounds how many cases run at once.
const maxCases = 6

// TestMPIScript runs every case under its shells. Most cases spend their
// time waiting for the script (bounds of 1-2 s), so they run concurrently:
// subtests started from goroutines do not take -parallel slots, which on a
// 2-core machine would serialise the waits.
func TestMPIScript(t *testing.T) {
	t.Parallel()
	slots := make(chan struct{}, maxCases)
	var wg sync.WaitGroup
	for _, c := range scriptCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			sh := shells()
			if !c.allShells {
				sh = sh[:1]
			}
			t.Run(c.name, func(t *testing.T) { eachShell(t, sh, c.run) })
		}()
	}
	wg.Wait()
}

// eachShell runs fn as one subtest per shell, all at once.
func eachShell(t *testing.T, shells []shell, fn func(t *testing.T, f *fixture)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, sh := range shells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(sh.name, func(t *testing.T) { fn(t, newFixture(t, sh)) })
		}()
	}
	wg.Wait()
}

// fixture is one pod's worth of directories and environment.
type fixture struct {
	t                                  *testing.T
	sh                                 shell
	script                             string
	bin, stub, runDir, cfg, keys, home string
	env                                map[string]string
}

func newFixture(t *testing.T, sh shell) *fixture {
	t.Helper()
	root := t.TempDir()
	script, err := filepath.Abs(mpiScript)
	require.NoError(t, err)
	f := &fixture{
		t: t, sh: sh, script: script,
		bin:    filepath.Join(root, "bin"),
		stub:   filepath.Join(root, "stub"),
		runDir: filepath.Join(root, "run"),
		cfg:    filepath.Join(root, "config"),
		keys:   filepath.Join(root, "keys"),
		home:   filepath.Join(root, "home"),
	}
	for _, d := range []string{f.bin, f.stub, f.runDir, f.cfg, f.keys, f.home,
		filepath.Join(f.stub, "hosts"), filepath.Join(f.stub, "dns")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, s := range stubs {
		data, err := os.ReadFile(filepath.Join("testdata", "stubs", s))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(f.bin, s), data, 0o755))
	}
	for _, tool := range systemTools {
		if p, err := exec.LookPath(tool); err == nil {
			require.NoError(t, os.Symlink(p, filepath.Join(f.bin, tool)))
		}
	}
	require.NoError(t, os.Symlink(sh.bin, filepath.Join(f.bin, "sh")))
	// No newline at the end: the script must add one (OpenSSH needs it).
	f.write(filepath.Join(f.keys, "ssh-privatekey"),
		"-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----", 0o400)
	f.write(filepath.Join(f.keys, "ssh-publickey"), "ssh-ed25519 AAAAC3fake trainsonnet\n", 0o400)
	f.hostfile(worker0 + " slots=2\n" + worker1 + " slots=2\n")
	f.env = map[string]string{
		"PATH":             f.bin,
		"HOME":             f.home,
		"STUB_DIR":         f.stub,
		"TS_CONFIG_DIR":    f.cfg,
		"TS_KEY_DIR":       f.keys,
		"TS_RUN_DIR":       f.runDir,
		"TS_POLL_INTERVAL": "1",
		"TS_LAUNCHER":      launcher,
	}
	return f
}

func (f *fixture) write(path, content string, mode os.FileMode) {
	f.t.Helper()
	require.NoError(f.t, os.WriteFile(path, []byte(content), mode))
	require.NoError(f.t, os.Chmod(path, mode))
}

func (f *fixture) hostfile(content string) {
	f.write(filepath.Join(f.cfg, "hostfile"), content, 0o644)
}

// host sets how the ssh stub treats host: up, down, hang, "fail-first <n>".
func (f *fixture) host(name, state string) {
	f.write(filepath.Join(f.stub, "hosts", name), state, 0o644)
}

// resolvable makes the getent stub resolve (or stop resolving) name.
func (f *fixture) resolvable(name string, yes bool) {
	p := filepath.Join(f.stub, "dns", name)
	if yes {
		f.write(p, "", 0o644)
		return
	}
	require.NoError(f.t, os.Remove(p))
}

func (f *fixture) without(tool string) {
	require.NoError(f.t, os.Remove(filepath.Join(f.bin, tool)))
}

func (f *fixture) touch(path string) { f.write(path, "", 0o644) }

// lines returns the complete lines of a stub log, which may be being
// written (none when it does not exist).
func (f *fixture) lines(log string) []string {
	data, err := os.ReadFile(filepath.Join(f.stub, log))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(f.t, err)
	text := string(data)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	} else {
		return nil
	}
	return strings.Split(text, "\n")
}

// proc is one run of the script.
type proc struct {
	f       *fixture
	cmd     *exec.Cmd
	outPath string
	start   time.Time
	done    chan struct{}
	code    int
}

// start runs the script with a subcommand. Output goes to a file, not a
// pipe, so that a stray grandchild cannot keep Wait from returning.
func (f *fixture) start(args ...string) *proc {
	f.t.Helper()
	out, err := os.CreateTemp(f.t.TempDir(), "out")
	require.NoError(f.t, err)
	argv := append(slices.Clone(f.sh.argv[1:]), f.script)
	cmd := exec.Command(f.sh.argv[0], append(argv, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = f.runDir
	for k, v := range f.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Own process group: cleanup can end every process the run left.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{f: f, cmd: cmd, outPath: out.Name(), done: make(chan struct{})}
	p.start = time.Now()
	require.NoError(f.t, cmd.Start())
	require.NoError(f.t, out.Close())
	go func() {
		err := cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		if err != nil && p.code == -1 {
			p.code = 128 + int(cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())
		}
		close(p.done)
	}()
	f.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// wait returns the exit code; the test fails if the script is still running
// after hardLimit.
func (p *proc) wait() int {
	p.f.t.Helper()
	select {
	case <-p.done:
	case <-time.After(hardLimit - time.Since(p.start)):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		p.f.t.Fatalf("script still running after %s; output:\n%s", hardLimit, p.output())
	}
	return p.code
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) output() string {
	data, _ := os.ReadFile(p.outPath)
	return string(data)
}

func (p *proc) signal(sig syscall.Signal) {
	p.f.t.Helper()
	require.NoError(p.f.t, p.cmd.Process.Signal(sig))
}

// waitFor polls cond until it holds; fails the test after hardLimit.
func (p *proc) waitFor(what string, cond func() bool) {
	p.f.t.Helper()
	deadline := time.Now().Add(hardLimit)
	for !cond() {
		if time.Now().After(deadline) || p.exited() {
			if cond() {
				return
			}
			p.f.t.Fatalf("never saw %s; output:\n%s", what, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) waitForOutput(s string) {
	p.f.t.Helper()
	p.waitFor(fmt.Sprintf("%q in the output", s), func() bool { return strings.Contains(p.output(), s) })
}

// runTimed runs the script to its end and also returns how long it ran
// after printing marker: a bound is measured from the start of the wait it
// bounds, not from a start-up that a loaded machine may slow down.
func (f *fixture) runTimed(marker string, args ...string) (int, *proc, time.Duration) {
	f.t.Helper()
	p := f.start(args...)
	p.waitForOutput(marker)
	t0 := time.Now()
	code := p.wait()
	return code, p, time.Since(t0)
}

// run runs the script to its end.
func (f *fixture) run(args ...string) (int, *proc) {
	f.t.Helper()
	p := f.start(args...)
	return p.wait(), p
}

// sshCall is one logged call of the ssh stub.
type sshCall struct {
	n          bool
	config     string
	host, args string
}

func (f *fixture) sshCalls() []sshCall {
	var calls []sshCall
	for _, l := range f.lines("ssh.log") {
		fields := strings.SplitN(l, " ", 4)
		require.GreaterOrEqual(f.t, len(fields), 3, "ssh.log line %q", l)
		c := sshCall{n: fields[0] == "n=1", config: strings.TrimPrefix(fields[1], "F="), host: fields[2]}
		if len(fields) == 4 {
			c.args = fields[3]
		}
		calls = append(calls, c)
	}
	return calls
}

// hostsCalledWith lists, sorted and once each, the hosts that got command.
func (f *fixture) hostsCalledWith(command string) []string {
	var hosts []string
	for _, c := range f.sshCalls() {
		if c.args == command && !slices.Contains(hosts, c.host) {
			hosts = append(hosts, c.host)
		}
	}
	slices.Sort(hosts)
	return hosts
}

func (f *fixture) stopCommand() string { return "touch '" + f.runDir + "/stop'" }

var gaveUpRE = regexp.MustCompile(`(?m)^trainsonnet: gave up after (\d+)s waiting for workers; not reachable over ssh on port (\d+): (.+)$`)

// missingHosts returns the hosts named by the launcher's give-up line.
func missingHosts(t *testing.T, out string) []string {
	t.Helper()
	m := gaveUpRE.FindStringSubmatch(out)
	require.NotNil(t, m, "no give-up line in:\n%s", out)
	hosts := strings.Fields(m[3])
	slices.Sort(hosts)
	return hosts
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Mode().Perm()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// messagesArePrefixed: every line the script itself prints is ours.
func messagesArePrefixed(t *testing.T, out string, allowed ...string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "trainsonnet: ") || slices.Contains(allowed, l) {
			continue
		}
		t.Errorf("unexpected output line %q", l)
	}
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
	assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith("true"))
	assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith(f.stopCommand()), "every worker told to stop")
	for _, c := range f.sshCalls() {
		assert.True(t, c.n, "ssh without -n: %+v", c)
		assert.Equal(t, filepath.Join(f.runDir, "ssh", "config"), c.config)
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
	cfg := readFile(t, filepath.Join(sshDir, "config"))
	for _, want := range []string{"Host *", "Port 2022", "IdentityFile " + filepath.Join(sshDir, "id"),
		"IdentitiesOnly yes", "StrictHostKeyChecking no", "UserKnownHostsFile /dev/null",
		"LogLevel ERROR", "BatchMode yes", "ConnectTimeout "} {
		assert.Contains(t, cfg, want)
	}
	assert.Equal(t, "Include "+filepath.Join(sshDir, "config")+"\n", readFile(t, filepath.Join(f.home, ".ssh", "config")))
	assert.Empty(t, f.lines("sshd.log"), "no sshd without TS_SELF")
}

// With retries of the launcher pod (backoffLimit > 0), a failed exec must
// not stop the workers: the next attempt needs them. Success still does.
func launcherLeavesWorkersUpForARetry(t *testing.T, f *fixture) {
	f.env["TS_STOP_WORKERS_ON_FAILURE"] = "0"
	f.env["TS_EXEC"] = "exit 3"
	code, p := f.run("launcher")
	assert.Equal(t, 3, code, p.output())
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "no worker told to stop")
	assert.Contains(t, p.output(), "trainsonnet: leaving the workers up for a retry of the launcher")

	f.env["TS_EXEC"] = "exit 0"
	code, p = f.run("launcher")
	assert.Equal(t, 0, code, p.output())
	assert.Equal(t, []string{worker0, worker1}, f.hostsCalledWith(f.stopCommand()), "success stops the workers")
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
	assert.Contains(t, readFile(t, filepath.Join(f.runDir, "ssh", "config")), "Port 2222\n")
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

// launcherGivesUpWhenSSHHangs: a probe that never returns still ends at
// the bound, with timeout(1) and with the POSIX sh fallback.
func launcherGivesUpWhenSSHHangs(noTimeout bool) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		if noTimeout {
			f.without("timeout")
		}
		f.host(worker1, "hang")
		f.env["TS_INIT_TIMEOUT"] = "2"
		f.env["TS_EXEC"] = "true"
		code, p, waited := f.runTimed("waiting up to 2s", "launcher")
		require.Equal(t, 124, code, p.output())
		assert.Less(t, waited, 2*time.Second+slack)
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

var obsoleteSSHDOptions = []string{"Protocol", "UsePrivilegeSeparation", "KeyRegenerationInterval",
	"ServerKeyBits", "RSAAuthentication", "RhostsRSAAuthentication", "dsa", "DSA"}

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
	cfg := readFile(t, filepath.Join(f.stub, "sshd_config"))
	assert.Equal(t, readFile(t, filepath.Join(ssh, "sshd_config")), cfg, "sshd got the generated config")
	for _, want := range []string{"Port 2022", "HostKey " + filepath.Join(ssh, "ssh_host_ed25519_key"),
		"AuthorizedKeysFile " + filepath.Join(ssh, "authorized_keys"), "PidFile " + filepath.Join(ssh, "sshd.pid"),
		"PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no", "PrintMotd no"} {
		assert.Contains(t, cfg, want+"\n")
	}
	for _, opt := range obsoleteSSHDOptions {
		assert.NotContains(t, cfg, opt)
	}
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
	assert.Contains(t, readFile(t, filepath.Join(f.stub, "sshd_config")), "ForceCommand sh "+session+"\n")
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

func workerFailsWhenSSHDDies(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["STUB_SSHD_DIE_AFTER"] = "1"
	code, p := f.run("worker")
	require.Equal(t, 1, code, p.output())
	assert.Regexp(t, `(?m)^trainsonnet: sshd \(pid \d+\) exited unexpectedly`, p.output())
	assert.FileExists(t, filepath.Join(f.runDir, "finished"))
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
	assert.Contains(t, p.output(), "trainsonnet: sshd rejected "+filepath.Join(f.runDir, "ssh", "sshd_config")+":\n"+
		"line 3: Bad configuration option: Frobnicate\n")
	assert.Empty(t, slices.DeleteFunc(f.lines("sshd.log"), func(l string) bool {
		return !strings.HasPrefix(l, "start ")
	}), "not started")
}

// -------------------------------------------------------------------- S3

func s3UploadEnv(f *fixture) string {
	out := filepath.Join(f.runDir, "output")
	require.NoError(f.t, os.MkdirAll(out, 0o755))
	f.env["TS_S3_FROM"] = out
	f.env["TS_S3_TO"] = "s3://bucket/results/"
	f.env["TS_NAMESPACE"] = "ml"
	f.env["TS_JOB_NAME"] = "train"
	f.env["TS_POD_NAME"] = "train-worker-0-abcde"
	return out
}

func s3UploadWaitsForFinished(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	f.resolvable(launcher, true)
	f.env["TS_S3_ENDPOINT"] = "http://minio:9000"
	p := f.start("s3-upload")
	p.waitFor("a launcher lookup", func() bool { return len(f.lines("getent.log")) > 0 })
	time.Sleep(1500 * time.Millisecond)
	require.False(t, p.exited(), p.output())
	assert.Empty(t, f.lines("aws.log"), "no upload before the worker finished")
	f.touch(filepath.Join(f.runDir, "finished"))
	require.Equal(t, 0, p.wait(), p.output())
	assert.Equal(t, []string{"--endpoint-url http://minio:9000 s3 cp --recursive " + out +
		" s3://bucket/results/ml/train/train-worker-0-abcde"}, f.lines("aws.log"))
	messagesArePrefixed(t, p.output())
}

func s3UploadWhenLauncherGone(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	f.resolvable(launcher, true)
	f.env["TS_LAUNCHER_GRACE"] = "1"
	p := f.start("s3-upload")
	p.waitFor("a successful lookup", func() bool {
		return slices.Contains(f.lines("getent.log"), launcher+" found")
	})
	f.resolvable(launcher, false)
	require.Equal(t, 0, p.wait(), p.output())
	assert.Contains(t, p.output(), "has not resolved for 1s; uploading what there is")
	assert.Equal(t, []string{"s3 cp --recursive " + out + " s3://bucket/results/ml/train/train-worker-0-abcde"},
		f.lines("aws.log"))
}

func s3UploadAWSFails(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	f.touch(filepath.Join(f.runDir, "finished"))
	f.env["STUB_AWS_RC"] = "5"
	code, p := f.run("s3-upload")
	require.Equal(t, 5, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: upload of "+out+
		" to s3://bucket/results/ml/train/train-worker-0-abcde failed (aws exit code 5)")
}

func s3UploadNothingToUpload(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	require.NoError(t, os.Remove(out))
	f.touch(filepath.Join(f.runDir, "finished"))
	code, p := f.run("s3-upload")
	require.Equal(t, 1, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: nothing to upload: "+out+" does not exist")
	assert.Empty(t, f.lines("aws.log"))
}

func s3Download(t *testing.T, f *fixture) {
	f.env["TS_S3_FROM"] = "s3://bucket/data"
	f.env["TS_S3_TO"] = "/data"
	code, p := f.run("s3-download")
	require.Equal(t, 0, code, p.output())
	f.env["TS_S3_ENDPOINT"] = "http://minio:9000"
	f.env["STUB_AWS_RC"] = "1"
	code, p = f.run("s3-download")
	require.Equal(t, 1, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: download of s3://bucket/data to /data failed (aws exit code 1)")
	assert.Equal(t, []string{
		"s3 cp --recursive s3://bucket/data /data",
		"--endpoint-url http://minio:9000 s3 cp --recursive s3://bucket/data /data",
	}, f.lines("aws.log"))
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
		want: "trainsonnet: TS_INIT_TIMEOUT must be a whole number, got '5m'"},
	{name: "leading zero", args: []string{"worker"}, env: map[string]string{"TS_LAUNCHER_GRACE": "060"},
		want: "trainsonnet: TS_LAUNCHER_GRACE must be written without leading zeros, got '060'"},
	{name: "zero poll interval", args: []string{"worker"}, env: map[string]string{"TS_POLL_INTERVAL": "0"},
		want: "trainsonnet: TS_POLL_INTERVAL must be at least 1, got 0"},
	{name: "relative run dir", args: []string{"launcher"}, env: map[string]string{"TS_RUN_DIR": "run"},
		want: "trainsonnet: TS_RUN_DIR must be an absolute path, got 'run'"},
	{name: "missing hostfile", args: []string{"launcher"}, env: map[string]string{"TS_HOSTFILE": "/nonexistent/hostfile"},
		want: "trainsonnet: hostfile /nonexistent/hostfile not found or not readable (TS_HOSTFILE)"},
	{name: "missing key", args: []string{"launcher"}, env: map[string]string{"TS_KEY_DIR": "/nonexistent"},
		want: "trainsonnet: ssh key /nonexistent/ssh-privatekey not found or not readable (TS_KEY_DIR)"},
	{name: "download without source", args: []string{"s3-download"}, env: map[string]string{"TS_S3_TO": "/data"},
		want: "trainsonnet: missing required environment variable TS_S3_FROM"},
	{name: "download from a non-s3 URI", args: []string{"s3-download"},
		env:  map[string]string{"TS_S3_FROM": "gs://bucket/x", "TS_S3_TO": "/data"},
		want: "trainsonnet: TS_S3_FROM must be an s3:// URI, got 'gs://bucket/x'"},
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

// ------------------------------------------------------------ shellcheck

func TestScriptsAreShellcheckClean(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck not installed (CI installs it)")
	}
	scripts, err := filepath.Glob("assets/*.sh")
	require.NoError(t, err)
	require.NotEmpty(t, scripts)
	for _, s := range stubs {
		scripts = append(scripts, filepath.Join("testdata", "stubs", s))
	}
	out, err := exec.Command("shellcheck", append([]string{"-s", "sh"}, scripts...)...).CombinedOutput()
	assert.NoError(t, err, "shellcheck -s sh:\n%s", out)
}

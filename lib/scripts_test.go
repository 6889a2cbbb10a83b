package lib_test

// Hermetic tests of lib/assets/*.sh, the scripts of the pods: runtime.sh
// (runtime_sh_test.go), mpi.sh (mpi_sh_test.go) and s3.sh (s3_sh_test.go),
// run from a config dir laid out as the ConfigMap is, with the ssh
// configuration rendered by lib/ssh.libsonnet for the test's paths. The
// scripts run for real, under /bin/sh (dash on Debian) and, for the cases
// that lean on shell behaviour, also under `busybox sh` and `bash --posix`
// when they are installed. Their PATH holds only stubs of ssh, sshd,
// ssh-keygen, getent and aws (lib/testdata/stubs, driven by files in a
// per-test STUB_DIR) plus links to the few system utilities the scripts may
// use, so a new dependency shows up as a failure here. test/scripts has the
// real-process counterpart (real sshd and mpirun).

import (
	"bufio"
	"fmt"
	"maps"
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
	worker0  = "train-worker-0.train"
	worker1  = "train-worker-1.train"
	launcher = "train-launcher.train"
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
var systemTools = []string{"date", "sleep", "cat", "cp", "mv", "chmod", "mkdir", "rm", "touch", "id", "sed", "timeout", "awk", "wc", "head", "od", "tr", "uname", "mktemp", "cksum"}

var stubs = []string{"ssh", "sshd", "ssh-keygen", "getent", "aws"}

// assets are the scripts of the ConfigMap; scriptFor says which one a
// subcommand belongs to.
var assets = []string{"runtime.sh", "tcp.py", "mpi.sh", "s3.sh", "gpu-discovery.sh", "dask.sh"}

func scriptFor(args []string) string {
	if len(args) > 0 {
		switch {
		case args[0] == "run":
			return "runtime.sh"
		case strings.HasPrefix(args[0], "s3-"):
			return "s3.sh"
		}
	}
	return "mpi.sh"
}

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

// scriptCase is one behaviour checked.
type scriptCase struct {
	name string
	// allShells: also under busybox sh and bash --posix, for the cases that
	// lean on shell behaviour (traps, wait, kill -0 and reaping, read loops,
	// eval, set --); the rest run under /bin/sh only, to keep the suite
	// light on a 2-core machine where every fork is costly.
	allShells bool
	run       func(t *testing.T, f *fixture)
}

// caseSlots bounds how many cases run at once, over all the scripts' tests.
var caseSlots = make(chan struct{}, 6)

// runCases runs every case under its shells. Most cases spend their time
// waiting for the script (bounds of 1-2 s), so they run concurrently:
// subtests started from goroutines do not take -parallel slots, which on a
// 2-core machine would serialise the waits.
func runCases(t *testing.T, cases []scriptCase) {
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			caseSlots <- struct{}{}
			defer func() { <-caseSlots }()
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
	bin, stub, runDir, cfg, keys, home string
	env                                map[string]string
}

func newFixture(t *testing.T, sh shell) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{
		t: t, sh: sh,
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
	// The ConfigMap: the scripts, and the ssh configuration for this
	// fixture's run dir.
	for _, a := range assets {
		data, err := os.ReadFile(filepath.Join("assets", a))
		require.NoError(t, err)
		f.write(filepath.Join(f.cfg, a), string(data), 0o444)
	}
	client, server := renderSSHConfig(t, 2022, filepath.Join(f.runDir, "ssh"))
	f.write(filepath.Join(f.cfg, "ssh_config"), client, 0o444)
	f.write(filepath.Join(f.cfg, "sshd_config"), server, 0o444)
	// No newline at the end: the script must add one (OpenSSH needs it).
	f.write(filepath.Join(f.keys, "ssh-privatekey"),
		"-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----", 0o400)
	f.write(filepath.Join(f.keys, "ssh-publickey"), "ssh-ed25519 AAAAC3fake trainsonnet\n", 0o400)
	f.hostfile(worker0 + " slots=2\n" + worker1 + " slots=2\n")
	f.resolvable(dnsProbe, true) // the cluster's DNS answers
	f.env = map[string]string{
		"PATH":             f.bin,
		"HOME":             f.home,
		"STUB_DIR":         f.stub,
		"TS_CONFIG_DIR":    f.cfg,
		"TS_KEY_DIR":       f.keys,
		"TS_RUN_DIR":       f.runDir,
		"TS_POLL_INTERVAL": "1",
		"TS_LAUNCHER":      launcher,
		// The stop port has cases of its own (stopport_sh_test.go); the
		// rest tell the workers over ssh, as without one.
		"TS_STOP_PORT": "0",
	}
	// The scripts' own variables come from the scripts, never from the
	// pod's environment, which a user's env reaches: every case runs with
	// each of them set there.
	for _, name := range scriptGlobals() {
		f.env[name] = "poison-from-the-environment"
	}
	return f
}

// scriptGlobals are the variables the scripts assign (NAME=), but for
// their inputs: TS_* and the system's (PATH, LD_LIBRARY_PATH, CONDA_*,
// IFS).
var scriptGlobals = sync.OnceValue(func() []string {
	seen := map[string]bool{}
	assign := regexp.MustCompile(`(?m)^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=`)
	for _, a := range assets {
		data, err := os.ReadFile(filepath.Join("assets", a))
		if err != nil {
			panic(err)
		}
		for _, m := range assign.FindAllStringSubmatch(string(data), -1) {
			name := m[1]
			switch {
			case strings.HasPrefix(name, "TS_"), strings.HasPrefix(name, "CONDA_"),
				name == "PATH", name == "LD_LIBRARY_PATH", name == "IFS":
			default:
				seen[name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
})

// forks orders writing an executable and starting a script: a child forked
// while an executable's file is still open for writing holds that open
// until it execs, and running the file then fails with ETXTBSY (Go issue
// 22315); the script under test would take a stub that fails to run (a
// fake nvidia-smi) as absent. Writers of executables hold it, starts share it.
var forks sync.RWMutex

func (f *fixture) write(path, content string, mode os.FileMode) {
	f.t.Helper()
	if mode&0o111 != 0 {
		forks.Lock()
		defer forks.Unlock()
	}
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

// dnsProbe is the name every pod of a cluster resolves (TS_DNS_PROBE's
// default): the fixture's resolves unless a test cuts the pod off.
const dnsProbe = "kubernetes.default.svc"

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

// start runs the script of a subcommand (scriptFor).
func (f *fixture) start(args ...string) *proc {
	f.t.Helper()
	return f.startScript(scriptFor(args), args...)
}

// startScript runs sh <config dir>/<script> args... Output goes to a file,
// not a pipe, so that a stray grandchild cannot keep Wait from returning.
func (f *fixture) startScript(script string, args ...string) *proc {
	f.t.Helper()
	out, err := os.CreateTemp(f.t.TempDir(), "out")
	require.NoError(f.t, err)
	argv := append(slices.Clone(f.sh.argv[1:]), filepath.Join(f.cfg, script))
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
	forks.RLock()
	err = cmd.Start()
	forks.RUnlock()
	require.NoError(f.t, err)
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
func messagesArePrefixed(t *testing.T, out string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "trainsonnet: ") {
			continue
		}
		t.Errorf("unexpected output line %q", l)
	}
}

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

// TestScriptGlobalsStartUnset: every variable runtime.sh and mpi.sh assign
// in a function (not at the top of the file, where it is set before any
// use) is unset when runtime.sh is sourced: a value from the pod's
// environment, which a user's env reaches, never stands in for one the
// script has not set yet (SIGNAL_EXIT=0 made a deleted launcher exit 0).
// Every case of the scripts' tests runs with them all set there too.
func TestScriptGlobalsStartUnset(t *testing.T) {
	runtime, err := os.ReadFile(filepath.Join("assets", "runtime.sh"))
	require.NoError(t, err)
	unsetLine := regexp.MustCompile(`(?m)^unset ((?:[^\n]*\\\n)*[^\n]*)`).FindSubmatch(runtime)
	require.NotNil(t, unsetLine, "runtime.sh unsets the scripts' own variables")
	unset := map[string]bool{}
	for _, name := range strings.Fields(strings.ReplaceAll(string(unsetLine[1]), "\\\n", " ")) {
		unset[name] = true
	}
	top := regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*)=`)
	inner := regexp.MustCompile(`(?m)^\s+(?:export\s+)?([A-Z][A-Z0-9_]*)=`)
	for _, a := range []string{"runtime.sh", "mpi.sh"} {
		data, err := os.ReadFile(filepath.Join("assets", a))
		require.NoError(t, err)
		atTop := map[string]bool{}
		for _, m := range top.FindAllStringSubmatch(string(data), -1) {
			atTop[m[1]] = true
		}
		for _, m := range inner.FindAllStringSubmatch(string(data), -1) {
			name := m[1]
			if atTop[name] || strings.HasPrefix(name, "TS_") || strings.HasPrefix(name, "CONDA_") || name == "PATH" || name == "LD_LIBRARY_PATH" || name == "IFS" {
				continue
			}
			assert.True(t, unset[name], "%s assigns %s in a function: add it to runtime.sh's unset", a, name)
		}
	}
}

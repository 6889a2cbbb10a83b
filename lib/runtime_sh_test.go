package lib_test

// The cases of lib/assets/runtime.sh run as a command (`run`), the way a
// role without ssh uses it; mpi_sh_test.go and s3_sh_test.go cover it as
// their library. The harness is in scripts_test.go.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var runtimeCases = []scriptCase{
	{"run/exit_code_passes_through", true, runExitCodePassesThrough},
	{"run/usage_errors", false, runUsageErrors},
	{"run/passes_SIGTERM_on", true, runPassesSignalOn(syscall.SIGTERM, 143)},
	{"run/passes_SIGINT_on_as_SIGTERM", true, runPassesSignalOn(syscall.SIGINT, 130)},
	{"run/exits_143_on_SIGTERM_while_waiting", true, runExits143WhileWaiting},
	{"run/wait_tcp_with_bash", false, runWaitsForTCP("bash")},
	{"run/wait_tcp_with_python3", false, runWaitsForTCP("python3")},
	{"run/wait_tcp_with_nc", false, runWaitsForTCP("nc")},
	{"run/wait_tcp_gives_up", true, runWaitTCPGivesUp},
	{"run/wait_tcp_without_a_tool", false, runWaitTCPWithoutATool},
	{"run/wait_tcp_not_with_an_nc_without_z", false, runWaitTCPNotWithAnNCWithoutZ},
	{"run/watch_stops_command_when_name_gone", true, runWatchStopsCommandWhenNameGone},
	{"run/watch_fails_when_cut_off", true, runWatchFailsWhenCutOff},
	{"run/watch_fails_when_cut_off_before_the_grace", true, runWatchFailsWhenCutOffBeforeTheGrace},
	{"run/watch_waits_the_grace_for_a_lead_gone", true, runWatchWaitsTheGraceForALeadGone},
	{"run/watch_without_dns_probe", true, runWatchWithoutDNSProbe},
	{"run/watch_gives_up_when_name_never_resolves", false, runWatchGivesUpWhenNameNeverResolves},
	{"run/watch_timeout_of_its_own", false, runWatchTimeoutOfItsOwn},
	{"run/watch_timeout_0_waits_for_good", true, runWatchTimeoutZeroWaitsForGood},
	{"run/watch_command_ends_first", false, runWatchCommandEndsFirst},
	{"run/watch_without_getent", false, runWatchWithoutGetent},
	{"run/tell_end_after_cmd", true, runTellEndAfterCmd},
	{"run/tell_end_not_before_a_retry", false, runTellEndNotBeforeARetry},
	{"run/tell_end_without_python3", false, runTellEndWithoutPython3},
	{"run/hear_end_stops_cmd_at_once", true, runHearEndStopsCmdAtOnce},
	{"run/lead_and_follower", true, runLeadAndFollower},
	{"run/end_port_usage_errors", false, runEndPortUsageErrors},
	{"run/group_lead_ends_when_a_pod_is_made_again", true, runGroupLeadEndsWhenAPodIsMadeAgain},
	{"run/group_lead_waits_for_the_group_to_settle", false, runGroupLeadWaitsForTheGroupToSettle},
	{"run/group_lead_outlives_one_odd_answer", false, runGroupLeadOutlivesOneOddAnswer},
	{"run/group_ends_as_it_succeeds", false, runGroupEndsAsItSucceeds},
	{"run/group_follower_ends_when_the_lead_is_made_again", true, runGroupFollowerEndsWhenTheLeadIsMadeAgain},
	{"run/group_follower_cut_off", false, runGroupFollowerCutOff},
	{"run/group_usage_errors", false, runGroupUsageErrors},
}

// TestRuntimeScript runs the cases of runtime.sh's run command.
func TestRuntimeScript(t *testing.T) {
	t.Parallel()
	runCases(t, runtimeCases)
}

// termCommand is a CMD that records the SIGTERM it gets (and exits 7 on it).
func termCommand(f *fixture) []string {
	return []string{"sh", "-c", `trap 'echo got-term > "$0/cmd-term"; exit 7' TERM; touch "$0/cmd-ready"; ` +
		`while :; do sleep 1 & wait $!; done`, f.runDir}
}

func (p *proc) waitForFile(path string) {
	p.f.t.Helper()
	p.waitFor(path, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func runExitCodePassesThrough(t *testing.T, f *fixture) {
	code, p := f.run("run", "--", "sh", "-c", `printf '%s|' "$@" > "$0/args"; exit 7`, f.runDir, "a b", "*")
	assert.Equal(t, 7, code, p.output())
	assert.Equal(t, "a b|*|", readFile(t, filepath.Join(f.runDir, "args")), "arguments as given, not split or globbed")
	assert.Contains(t, p.output(), "trainsonnet: sh exited with code 7\n")
	code, p = f.run("run", "--", "true")
	assert.Equal(t, 0, code, p.output())
	code, p = f.run("run", "--", "no-such-program")
	assert.Equal(t, 127, code, p.output())
}

func runUsageErrors(t *testing.T, f *fixture) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "trainsonnet: missing subcommand\nusage: sh runtime.sh run "},
		{[]string{"start"}, "trainsonnet: unknown subcommand 'start'"},
		{[]string{"run"}, "trainsonnet: no command after --"},
		{[]string{"run", "--"}, "trainsonnet: no command after --"},
		{[]string{"run", "true"}, "trainsonnet: unknown option 'true' (the command goes after --)"},
		{[]string{"run", "--watch"}, "trainsonnet: --watch needs a value"},
		{[]string{"run", "--wait-tcp", "host", "--", "true"}, "trainsonnet: --wait-tcp wants HOST:PORT, got 'host'"},
		{[]string{"run", "--wait-tcp", "host:http", "--", "true"}, "trainsonnet: --wait-tcp wants HOST:PORT, got 'host:http'"},
		{[]string{"run", "--wait-tcp", ":80", "--", "true"}, "trainsonnet: --wait-tcp wants HOST:PORT, got ':80'"},
	} {
		// scriptFor picks runtime.sh for "run" only.
		p := f.startScript("runtime.sh", c.args...)
		assert.Equal(t, 2, p.wait(), "%q: %s", c.args, p.output())
		assert.Contains(t, p.output(), c.want, "%q", c.args)
	}
	f.env["TS_WATCH_GRACE"] = "1m"
	code, p := f.run("run", "--", "true")
	assert.Equal(t, 2, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: TS_WATCH_GRACE must be a whole number of seconds, got '1m'")
}

func runPassesSignalOn(sig syscall.Signal, want int) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		p := f.start(append([]string{"run", "--"}, termCommand(f)...)...)
		p.waitForFile(filepath.Join(f.runDir, "cmd-ready"))
		p.signal(sig)
		assert.Equal(t, want, p.wait(), p.output())
		assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
	}
}

func runExits143WhileWaiting(t *testing.T, f *fixture) {
	linkTool(t, f, "bash")
	p := f.start("run", "--wait-tcp", closedPort(t), "--", "touch", filepath.Join(f.runDir, "cmd-ran"))
	p.waitForOutput("waiting up to 300s")
	p.signal(syscall.SIGTERM)
	signalled := time.Now()
	assert.Equal(t, 143, p.wait(), p.output())
	assert.Less(t, time.Since(signalled), slack)
	assert.NoFileExists(t, filepath.Join(f.runDir, "cmd-ran"))
}

// linkTool puts a program the script may use for TCP probes into its PATH
// (a real binary: pyenv's shims need a PATH of their own); the case is
// skipped without one.
func linkTool(t *testing.T, f *fixture, tool string) {
	t.Helper()
	path := ""
	for _, p := range []string{"/usr/bin/" + tool, "/bin/" + tool} {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if p, err := exec.LookPath(tool); err == nil {
			path = p
		} else {
			t.Skipf("%s not installed", tool)
		}
	}
	require.NoError(t, os.Symlink(path, filepath.Join(f.bin, tool)))
}

// listen accepts TCP connections on 127.0.0.1 until the test ends; it
// returns HOST:PORT.
func listen(t *testing.T) string {
	t.Helper()
	return serve(t, "127.0.0.1:0", nil).String()
}

// serve accepts TCP connections at addr until the test ends, hands each
// to answer (if any) and closes it; it returns the address it listens on.
func serve(t *testing.T, addr string, answer func(net.Conn)) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if answer != nil {
				answer(c)
			}
			_ = c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr)
}

// closedPort is a HOST:PORT nothing listens on, for the whole test.
func closedPort(t *testing.T) string {
	t.Helper()
	addr, _ := reservedPort(t)
	return addr
}

// reservedPort is a HOST:PORT that refuses connections until open is
// called, and then accepts them: a socket bound to it and not listening
// holds the port, so that no other test's listener can take it in
// between (a port closed after it was found free could be, and was, on a
// loaded CI machine).
func reservedPort(t *testing.T) (addr string, open func()) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	file := os.NewFile(uintptr(fd), "reserved-port")
	t.Cleanup(func() { _ = file.Close() })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr = fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	return addr, func() {
		require.NoError(t, syscall.Listen(fd, 128))
		l, err := net.FileListener(file)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
	}
}

// runWaitsForTCP: CMD starts only once every endpoint accepts connections,
// one of them late, probed with tool.
func runWaitsForTCP(tool string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		linkTool(t, f, tool)
		if tool == "nc" {
			linkTool(t, f, "grep") // to see whether this nc has -z
		}
		up := listen(t)
		late, open := reservedPort(t)
		p := f.start("run", "--wait-tcp", up, "--wait-tcp", late, "--", "touch", filepath.Join(f.runDir, "cmd-ran"))
		p.waitForOutput("trainsonnet: 1 of 2 endpoints answered after ")
		time.Sleep(1500 * time.Millisecond)
		require.NoFileExists(t, filepath.Join(f.runDir, "cmd-ran"), "not before every endpoint answers: %s", p.output())
		open()
		require.Equal(t, 0, p.wait(), p.output())
		assert.FileExists(t, filepath.Join(f.runDir, "cmd-ran"))
		assert.Contains(t, p.output(), "trainsonnet: all 2 endpoints reachable after ")
		assert.Contains(t, p.output(), "trainsonnet: tiers: wait="+tool+" serve-end=- hear-end=- watch=-\n")
		messagesArePrefixed(t, p.output())
	}
}

func runWaitTCPGivesUp(t *testing.T, f *fixture) {
	linkTool(t, f, "bash")
	up, down := listen(t), closedPort(t)
	// 5 s, not 2: a loaded machine (make test runs this beside the node)
	// takes seconds to start the first try
	f.env["TS_INIT_TIMEOUT"] = "5"
	code, p, waited := f.runTimed("waiting up to 5s", "run", "--wait-tcp", up, "--wait-tcp", down, "--",
		"touch", filepath.Join(f.runDir, "cmd-ran"))
	require.Equal(t, 124, code, p.output())
	assert.Less(t, waited, 5*time.Second+slack)
	assert.Contains(t, p.output(), "trainsonnet: gave up after 5s waiting for endpoints; not reachable over TCP: "+down+"\n",
		"names exactly the endpoint that never answered")
	assert.NoFileExists(t, filepath.Join(f.runDir, "cmd-ran"))
}

func runWaitTCPWithoutATool(t *testing.T, f *fixture) {
	code, p := f.run("run", "--wait-tcp", listen(t), "--", "true")
	require.Equal(t, 127, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: --wait-tcp needs python3, bash or nc (with -z) in PATH to try TCP ports; none found")
}

// Debian's busybox nc has no -z (it would connect and wait for input).
func runWaitTCPNotWithAnNCWithoutZ(t *testing.T, f *fixture) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed")
	}
	if out, _ := exec.Command(busybox, "nc", "--help").CombinedOutput(); strings.Contains(string(out), "-z") {
		t.Skip("this busybox nc has -z")
	}
	require.NoError(t, os.Symlink(busybox, filepath.Join(f.bin, "nc")))
	linkTool(t, f, "grep")
	code, p := f.run("run", "--wait-tcp", listen(t), "--", "true")
	require.Equal(t, 127, code, p.output())
	assert.Contains(t, p.output(), "in PATH to try TCP ports; none found")
}

func runWatchStopsCommandWhenNameGone(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["TS_WATCH_GRACE"] = "1"
	f.env["TS_INIT_TIMEOUT"] = "2" // must not matter once resolved
	p := f.start(append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	p.waitForOutput("trainsonnet: " + launcher + " resolves")
	time.Sleep(2500 * time.Millisecond) // past TS_INIT_TIMEOUT: still running
	require.False(t, p.exited(), p.output())
	f.resolvable(launcher, false)
	gone := time.Now()
	require.Equal(t, 0, p.wait(), p.output())
	assert.Less(t, time.Since(gone), 1*time.Second+slack)
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
	assert.Contains(t, p.output(), "trainsonnet: "+launcher+" has not resolved for 1s; stopping sh\n")
	messagesArePrefixed(t, p.output())
}

// A follower cut off from the network loses NAME and every other name: it
// stops CMD and exits 69, a failure its Job replaces, not 0 (done).
func runWatchFailsWhenCutOff(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["TS_WATCH_GRACE"] = "1"
	p := f.start(append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	p.waitForOutput("trainsonnet: " + launcher + " resolves")
	f.resolvable(launcher, false)
	f.resolvable(dnsProbe, false)
	require.Equal(t, 69, p.wait(), p.output())
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
	assert.Regexp(t, "trainsonnet: "+regexp.QuoteMeta(launcher)+" has not resolved for [12]s, and neither has "+regexp.QuoteMeta(dnsProbe)+
		regexp.QuoteMeta(": this pod has lost the cluster's DNS (its network cut off?), not "+launcher+"; exiting 69 so that its Job replaces it; stopping sh\n"), p.output())
}

// A pod that resolves nothing is cut off long before its lead's grace (the
// time a retried lead has to come back) is over: it stops CMD and exits 69
// once the name has not resolved for TS_LOST_GRACE, so that its Job
// replaces it in time for the lead's next attempt.
func runWatchFailsWhenCutOffBeforeTheGrace(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.env["TS_WATCH_GRACE"] = "600"
	f.env["TS_LOST_GRACE"] = "2"
	p := f.start(append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	p.waitForOutput("trainsonnet: " + launcher + " resolves")
	f.resolvable(launcher, false)
	f.resolvable(dnsProbe, false)
	cut := time.Now()
	require.Equal(t, 69, p.wait(), p.output())
	assert.Less(t, time.Since(cut), 3*time.Second+slack, "TS_LOST_GRACE, not TS_WATCH_GRACE")
	assert.Regexp(t, "has not resolved for [23]s, and neither has "+regexp.QuoteMeta(dnsProbe)+": this pod has lost the cluster's DNS", p.output())
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
}

// The lead's name gone while the cluster's DNS answers is a lead being
// retried: TS_LOST_GRACE passes and the pod waits on for the grace.
func runWatchWaitsTheGraceForALeadGone(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.resolvable(dnsProbe, true)
	f.env["TS_WATCH_GRACE"] = "4"
	f.env["TS_LOST_GRACE"] = "1"
	p := f.start(append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	p.waitForOutput("trainsonnet: " + launcher + " resolves")
	f.resolvable(launcher, false)
	gone := time.Now()
	require.Equal(t, 0, p.wait(), p.output())
	assert.GreaterOrEqual(t, time.Since(gone), 3*time.Second, "waited the grace, not TS_LOST_GRACE")
	assert.Contains(t, p.output(), "trainsonnet: "+launcher+" has not resolved for 4s; stopping sh\n")
	assert.NotContains(t, p.output(), "lost the cluster's DNS")
}

// TS_DNS_PROBE empty: a name gone is the lead gone, whatever else resolves.
func runWatchWithoutDNSProbe(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	f.resolvable(dnsProbe, false)
	f.env["TS_WATCH_GRACE"] = "1"
	f.env["TS_DNS_PROBE"] = ""
	p := f.start(append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	p.waitForOutput("trainsonnet: " + launcher + " resolves")
	f.resolvable(launcher, false)
	require.Equal(t, 0, p.wait(), p.output())
	assert.Contains(t, p.output(), "trainsonnet: "+launcher+" has not resolved for 1s; stopping sh\n")
}

func runWatchGivesUpWhenNameNeverResolves(t *testing.T, f *fixture) {
	f.env["TS_INIT_TIMEOUT"] = "2"
	code, p, waited := f.runTimed("trainsonnet: watching ", append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	require.Equal(t, 124, code, p.output())
	assert.Less(t, waited, 2*time.Second+slack)
	assert.Contains(t, p.output(), "trainsonnet: gave up after 2s waiting for "+launcher+" to resolve; stopping sh\n")
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
}

// TS_WATCH_TIMEOUT bounds the wait for the watched name apart from
// TS_INIT_TIMEOUT (tf-distributed's leadTimeout).
func runWatchTimeoutOfItsOwn(t *testing.T, f *fixture) {
	f.env["TS_INIT_TIMEOUT"] = "60"
	f.env["TS_WATCH_TIMEOUT"] = "2"
	code, p, waited := f.runTimed("trainsonnet: watching ", append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	require.Equal(t, 124, code, p.output())
	assert.Less(t, waited, 2*time.Second+slack)
	assert.Contains(t, p.output(), "trainsonnet: gave up after 2s waiting for "+launcher+" to resolve; stopping sh\n")
}

// TS_WATCH_TIMEOUT=0: the name may take as long as it takes to appear (the
// job's deadline is the bound), and once it has, its going still stops CMD.
func runWatchTimeoutZeroWaitsForGood(t *testing.T, f *fixture) {
	f.env["TS_INIT_TIMEOUT"] = "1"
	f.env["TS_WATCH_TIMEOUT"] = "0"
	f.env["TS_WATCH_GRACE"] = "1"
	p := f.start(append([]string{"run", "--watch", launcher, "--"}, termCommand(f)...)...)
	p.waitForOutput("trainsonnet: watching ")
	time.Sleep(3 * time.Second) // three times TS_INIT_TIMEOUT: still waiting
	require.False(t, p.exited(), p.output())
	f.resolvable(launcher, true)
	p.waitForOutput("trainsonnet: " + launcher + " resolves")
	f.resolvable(launcher, false)
	require.Equal(t, 0, p.wait(), p.output())
	assert.Contains(t, p.output(), "trainsonnet: "+launcher+" has not resolved for 1s; stopping sh\n")
}

func runWatchCommandEndsFirst(t *testing.T, f *fixture) {
	f.resolvable(launcher, true)
	code, p := f.run("run", "--watch", launcher, "--", "sh", "-c", "sleep 1; exit 3")
	assert.Equal(t, 3, code, p.output())
}

func runWatchWithoutGetent(t *testing.T, f *fixture) {
	f.without("getent")
	code, p := f.run("run", "--watch", launcher, "--", "touch", filepath.Join(f.runDir, "cmd-ran"))
	assert.Equal(t, 127, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: getent not found in PATH (--watch resolves "+launcher+" with it)")
	assert.NoFileExists(t, filepath.Join(f.runDir, "cmd-ran"))
}

// runTellEndAfterCmd: a lead's CMD has ended (with 3): its end port says
// so with the job's token until its one follower has read it, and the
// script then exits with CMD's code at once, not after the whole bound.
func runTellEndAfterCmd(t *testing.T, f *fixture) {
	linkTool(t, f, "python3")
	port := freePort(t)
	f.env["TS_END_TOKEN"] = "job-chief"
	p := f.start("run", "--tell-end", fmt.Sprint(port), "--", "sh", "-c", "exit 3")
	p.waitForOutput(fmt.Sprintf("trainsonnet: the job is over: port %d says so for up to 24s; each of the 1 follower(s) reads it every 1s", port))
	assert.False(t, p.exited(), "open until its follower has read it: %s", p.output())
	assert.Equal(t, "SSH-2.0-trainsonnet trainsonnet-end-job-chief", readLine(t, "127.0.0.2", port))
	t0 := time.Now()
	assert.Equal(t, 3, p.wait(), p.output())
	assert.Less(t, time.Since(t0), 7*time.Second, "closed once its follower has read it, not after its 8s (a loaded machine may take seconds)")
	assert.Contains(t, p.output(), fmt.Sprintf("trainsonnet: 1 of 1 follower(s) read port %d within ", port))
	assert.Contains(t, p.output(), "trainsonnet: tiers: wait=- serve-end=python3 hear-end=- watch=-\n")
	messagesArePrefixed(t, p.output())
}

// runTellEndWithoutPython3: a lead whose image has no python3 serves no
// end port: it says so at start and at its end, and its followers stop
// once its name has gone for their grace.
func runTellEndWithoutPython3(t *testing.T, f *fixture) {
	linkTool(t, f, "bash") // a tool to read a port with, none to serve one
	port := freePort(t)
	code, p := f.run("run", "--tell-end", fmt.Sprint(port), "--", "sh", "-c", "exit 3")
	assert.Equal(t, 3, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: tiers: wait=- serve-end=none hear-end=- watch=-\n")
	assert.Contains(t, p.output(), fmt.Sprintf("trainsonnet: cannot open port %d: no python3 here\n", port))
	assert.Contains(t, p.output(), "trainsonnet: the followers stop 60s after this pod has gone instead\n")
}

// runTellEndNotBeforeARetry: TS_END_ON_FAILURE=0 (the Job retries the
// lead): a failed CMD says nothing, so the followers stay for the retry.
func runTellEndNotBeforeARetry(t *testing.T, f *fixture) {
	linkTool(t, f, "python3")
	port := freePort(t)
	f.env["TS_END_ON_FAILURE"] = "0"
	code, p := f.run("run", "--tell-end", fmt.Sprint(port), "--", "sh", "-c", "exit 3")
	assert.Equal(t, 3, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: leaving the followers up for a retry of this pod (TS_END_ON_FAILURE=0)\n")
	assert.NotContains(t, p.output(), "the job is over")
}

// runHearEndStopsCmdAtOnce: a follower reads its lead's end port at the
// address the lead's name resolved to; another server's line there is no
// end, the job's token is: CMD is stopped at once, with no grace, exit 0.
func runHearEndStopsCmdAtOnce(t *testing.T, f *fixture) {
	linkTool(t, f, "bash")
	var line atomic.Value
	line.Store("SSH-2.0-trainsonnet trainsonnet-end-other-job")
	port := bannerServer(t, &line)
	f.write(filepath.Join(f.stub, "dns", launcher), "127.0.0.1\n", 0o644)
	f.env["TS_WATCH_GRACE"] = "600"
	f.env["TS_END_TOKEN"] = "job-chief"
	p := f.start(append([]string{"run", "--watch", launcher, "--hear-end", fmt.Sprint(port), "--"}, termCommand(f)...)...)
	p.waitForOutput(fmt.Sprintf("trainsonnet: watching %s: sh stops once it says on its port %d that the job is over (read every 1s with bash), or once it has not resolved for 600s", launcher, port))
	time.Sleep(2500 * time.Millisecond)
	require.False(t, p.exited(), "another job's line is no end: %s", p.output())
	line.Store("SSH-2.0-trainsonnet trainsonnet-end-job-chief")
	said := time.Now()
	require.Equal(t, 0, p.wait(), p.output())
	assert.Less(t, time.Since(said), 2*time.Second+slack)
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
	assert.Contains(t, p.output(), fmt.Sprintf("trainsonnet: %s says the job is over (its port %d); stopping sh\n", launcher, port))
	assert.Contains(t, p.output(), "trainsonnet: tiers: wait=- serve-end=- hear-end=bash watch=getent\n")
	messagesArePrefixed(t, p.output())
}

// runLeadAndFollower: the two sides together, as a chief and a parameter
// server run them: the follower ends within a read period of the lead's
// CMD, and the lead as soon as the follower has read its port.
func runLeadAndFollower(t *testing.T, f *fixture) {
	linkTool(t, f, "python3")
	port := freePort(t)
	f.write(filepath.Join(f.stub, "dns", launcher), "127.0.0.1\n", 0o644)
	f.env["TS_WATCH_GRACE"] = "600"
	follower := f.start(append([]string{"run", "--watch", launcher, "--hear-end", fmt.Sprint(port), "--"}, termCommand(f)...)...)
	follower.waitForOutput("trainsonnet: " + launcher + " resolves")
	lead := f.start("run", "--tell-end", fmt.Sprint(port), "--", "true")
	require.Equal(t, 0, follower.wait(), follower.output())
	require.Equal(t, 0, lead.wait(), lead.output())
	assert.Less(t, time.Since(lead.start), 7*time.Second, "the lead, not after its 8s: %s", lead.output())
	assert.Contains(t, lead.output(), fmt.Sprintf("trainsonnet: 1 of 1 follower(s) read port %d within ", port))
	assert.Contains(t, follower.output(), fmt.Sprintf("says the job is over (its port %d)", port))
}

func runEndPortUsageErrors(t *testing.T, f *fixture) {
	for args, want := range map[string]string{
		"--hear-end 2223 -- true":            "--hear-end reads the end port of --watch's NAME: give --watch too",
		"--tell-end x -- true":               "--tell-end wants a port number, got 'x'",
		"--watch n --hear-end 70000 -- true": "--hear-end wants a port number, got '70000'",
		"--tell-end 022 -- true":             "--tell-end wants a port number, got '022'",
	} {
		code, p := f.run(append([]string{"run"}, strings.Fields(args)...)...)
		assert.Equal(t, 2, code, "%s: %s", args, p.output())
		assert.Contains(t, p.output(), "trainsonnet: "+want+"\n", args)
	}
	f.env["TS_FOLLOWERS"] = "many"
	code, p := f.run("run", "--tell-end", "2223", "--", "true")
	assert.Equal(t, 2, code, p.output())
	assert.Contains(t, p.output(), "TS_FOLLOWERS must be a whole number, got 'many'")
}

// The static group (--group): train, an Indexed Job of three pods behind
// the headless Service "train"; index 0, train-worker-0.train, leads.
const (
	groupService = "train"
	groupLead    = "train-worker-0.train"
)

func groupArgs(cmd ...string) []string {
	return append([]string{"run", "--group", groupService + ":3", "--group-lead", groupLead, "--"}, cmd...)
}

// addresses makes the getent stub resolve name to addrs ("getent ahosts"
// gives them all, "getent hosts" the first).
func (f *fixture) addresses(name string, addrs ...string) {
	f.write(filepath.Join(f.stub, "dns", name), strings.Join(addrs, "\n")+"\n", 0o644)
}

// groupLeadUp starts the lead of a settled group of three and returns it.
func groupLeadUp(t *testing.T, f *fixture, cmd ...string) *proc {
	f.env["JOB_COMPLETION_INDEX"] = "0"
	f.env["TS_GROUP_SETTLE"] = "1"
	f.addresses(groupService, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	p := f.start(groupArgs(cmd...)...)
	p.waitForOutput("trainsonnet: the group's 3 pods are up (train): it ends if one of them is made again\n")
	return p
}

// A pod of the group made again (it failed, was deleted, or was cut off
// and replaced): the lead stops CMD and exits 75, which the Job's
// podFailurePolicy ignores, so that the group meets again.
func runGroupLeadEndsWhenAPodIsMadeAgain(t *testing.T, f *fixture) {
	p := groupLeadUp(t, f, termCommand(f)...)
	f.addresses(groupService, "10.0.0.1", "10.0.0.3", "10.0.0.9")
	again := time.Now()
	require.Equal(t, 75, p.wait(), p.output())
	assert.Less(t, time.Since(again), 3*time.Second+slack, "two answers")
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
	assert.Contains(t, p.output(), "trainsonnet: train has 10.0.0.9, a pod made again in the group of 3 (one failed or was lost): the group cannot go on; stopping sh\n")
	assert.Contains(t, p.output(), "trainsonnet: exiting 75: the Job makes this pod again, with the group, and counts no failure\n")
	assert.Contains(t, p.output(), "trainsonnet: tiers: wait=- serve-end=- hear-end=- watch=getent\n")
	messagesArePrefixed(t, p.output())
}

// Until the group is whole and its answer has held for TS_GROUP_SETTLE,
// pods come and go freely: one replaced while the group forms (a pod of
// the last attempt still ending) ends nothing.
func runGroupLeadWaitsForTheGroupToSettle(t *testing.T, f *fixture) {
	f.env["JOB_COMPLETION_INDEX"] = "0"
	f.env["TS_GROUP_SETTLE"] = "3"
	f.addresses(groupService, "10.0.0.1", "10.0.0.2")
	p := f.start(groupArgs(termCommand(f)...)...)
	p.waitForOutput("trainsonnet: watching train: sh stops once a pod of the group of 3 (train) is made again\n")
	f.addresses(groupService, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	time.Sleep(1500 * time.Millisecond) // whole, not yet settled
	f.addresses(groupService, "10.0.0.1", "10.0.0.4", "10.0.0.3")
	p.waitForOutput("trainsonnet: the group's 3 pods are up (train): it ends if one of them is made again\n")
	require.False(t, p.exited(), p.output())
	f.addresses(groupService, "10.0.0.1", "10.0.0.3", "10.0.0.5")
	require.Equal(t, 75, p.wait(), p.output())
	assert.Contains(t, p.output(), "train has 10.0.0.5, a pod made again")
}

// One answer with a stranger (a DNS server's odd answer) is not a pod made
// again: it takes two in a row.
func runGroupLeadOutlivesOneOddAnswer(t *testing.T, f *fixture) {
	p := groupLeadUp(t, f, termCommand(f)...)
	before := len(f.lines("getent.log"))
	f.addresses(groupService, "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.9")
	p.waitFor("one odd answer", func() bool { return len(f.lines("getent.log")) > before })
	f.addresses(groupService, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	time.Sleep(3 * time.Second)
	require.False(t, p.exited(), p.output())
	assert.NotContains(t, p.output(), "made again in")
}

// A job that succeeds ends pod by pod: the lead sees pods go, none made
// again, and its CMD ends as it will.
func runGroupEndsAsItSucceeds(t *testing.T, f *fixture) {
	done := filepath.Join(f.runDir, "done")
	p := groupLeadUp(t, f, "sh", "-c", `while [ ! -e "$0" ]; do sleep 1; done`, done)
	f.addresses(groupService, "10.0.0.1", "10.0.0.3")
	time.Sleep(2 * time.Second)
	f.addresses(groupService, "10.0.0.1")
	time.Sleep(2 * time.Second)
	require.False(t, p.exited(), p.output())
	f.touch(done)
	require.Equal(t, 0, p.wait(), p.output())
	assert.Contains(t, p.output(), "trainsonnet: sh exited with code 0\n")
	assert.NotContains(t, p.output(), "cannot go on")
}

// A follower watches the lead's name: the lead made again (its address
// changed) is a new group, which this pod must join anew.
func runGroupFollowerEndsWhenTheLeadIsMadeAgain(t *testing.T, f *fixture) {
	f.env["JOB_COMPLETION_INDEX"] = "2"
	f.addresses(groupLead, "10.0.0.1")
	p := f.start(groupArgs(termCommand(f)...)...)
	p.waitForOutput("trainsonnet: " + groupLead + " resolves\n")
	time.Sleep(2 * time.Second)
	require.False(t, p.exited(), p.output())
	f.addresses(groupLead, "10.0.0.8")
	require.Equal(t, 75, p.wait(), p.output())
	assert.Equal(t, "got-term\n", readFile(t, filepath.Join(f.runDir, "cmd-term")), "CMD got SIGTERM")
	assert.Contains(t, p.output(), "trainsonnet: "+groupLead+", the group's lead, is now 10.0.0.8, not 10.0.0.1: it was made again: the group cannot go on; stopping sh\n")
}

// A follower that resolves nothing is cut off: 69, a failure of its own.
func runGroupFollowerCutOff(t *testing.T, f *fixture) {
	f.env["JOB_COMPLETION_INDEX"] = "1"
	f.env["TS_LOST_GRACE"] = "1"
	f.addresses(groupLead, "10.0.0.1")
	p := f.start(groupArgs(termCommand(f)...)...)
	p.waitForOutput("trainsonnet: " + groupLead + " resolves\n")
	f.resolvable(groupLead, false)
	f.resolvable(dnsProbe, false)
	require.Equal(t, 69, p.wait(), p.output())
	assert.Contains(t, p.output(), "this pod has lost the cluster's DNS")
}

func runGroupUsageErrors(t *testing.T, f *fixture) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--group", "train:3"}, "--group and --group-lead go together"},
		{[]string{"--group-lead", groupLead}, "--group and --group-lead go together"},
		{[]string{"--group", "train", "--group-lead", groupLead}, "--group wants SERVICE:COUNT, got 'train'"},
		{[]string{"--group", "train:03", "--group-lead", groupLead}, "--group wants SERVICE:COUNT, got 'train:03'"},
		{[]string{"--group", "tr ain:3", "--group-lead", groupLead}, "--group wants SERVICE:COUNT, got 'tr ain:3'"},
		{[]string{"--group", "train:3", "--group-lead", groupLead, "--watch", groupLead}, "--group watches the group's lead: not with --watch"},
		{[]string{"--group", "train:3", "--group-lead", groupLead}, "--group needs JOB_COMPLETION_INDEX, the pod's index in its Indexed Job, got ''"},
	} {
		code, p := f.run(append(append([]string{"run"}, c.args...), "--", "touch", filepath.Join(f.runDir, "cmd-ran"))...)
		assert.Equal(t, 2, code, p.output())
		assert.Contains(t, p.output(), "trainsonnet: "+c.want+"\n", c.args)
	}
	assert.NoFileExists(t, filepath.Join(f.runDir, "cmd-ran"))
}

package lib_test

// The cases of how the launcher of mpi.sh waits for its workers with one
// sweep a round and tells them the job is over on its stop port, and how a
// worker reads that port. The harness is in scripts_test.go; the TCP
// servers here are the test's own, on loopback.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var stopPortCases = []scriptCase{
	{"launcher/sweeps_with_python3_and_names_the_missing", false, launcherSweepsAndNamesTheMissing("python3")},
	{"launcher/sweeps_with_bash_and_names_the_missing", false, launcherSweepsAndNamesTheMissing("bash")},
	{"launcher/a_stuck_sweep_goes_on_after_the_stuck_worker", false, launcherStuckSweepGoesOn},
	{"launcher/stop_port_with_python3", false, launcherStopPortWithPython3},
	{"launcher/stop_port_with_sshd", false, launcherStopPortWithSSHD},
	{"launcher/stop_port_taken_falls_back_to_ssh", false, launcherStopPortTaken},
	{"launcher/stop_port_after_a_failed_wait", false, launcherStopPortAfterAFailedWait},
	{"worker/reads_the_stop_port_with_bash", true, workerReadsTheStopPort("bash")},
	{"worker/reads_the_stop_port_with_python3", false, workerReadsTheStopPort("python3")},
	{"worker/reads_the_stop_port_with_nc", false, workerReadsTheStopPort("nc")},
	{"worker/reads_the_stop_port_with_ssh", false, workerReadsTheStopPort("ssh")},
	{"stop_port_configuration_errors", false, stopPortConfigurationErrors},
}

// TestStopPort runs the cases of the sweep and the stop port.
func TestStopPort(t *testing.T) {
	t.Parallel()
	runCases(t, stopPortCases)
}

// serveOn accepts connections at addr ("127.0.0.2:0") until the test ends
// and closes them; it returns the port.
func serveOn(t *testing.T, addr string) int {
	t.Helper()
	return serve(t, addr, nil).Port
}

// freePort is a port of 127.0.0.1 nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// stopBanner is the stop banner of the fixture's key, as the scripts make it.
func stopBanner(t *testing.T, f *fixture) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `cksum <"$0" | awk '{ print $1 }'`, filepath.Join(f.keys, "ssh-publickey")).Output()
	require.NoError(t, err)
	return "trainsonnet-stop-" + strings.TrimSpace(string(out))
}

// readLine connects to 127.0.0.1:port from the local address from (an
// address of 127/8) and returns the first line the server sends.
func readLine(t *testing.T, from string, port int) string {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 3 * time.Second}
	c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(3*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimRight(line, "\r\n")
}

// loopbackWorkers: a hostfile of n workers at 127.0.0.1.. with their ssh
// port served (all but those in down), as TS_SSH_PORT.
func loopbackWorkers(t *testing.T, f *fixture, n int, down ...int) []string {
	t.Helper()
	// The first worker's port, taken at once, is every worker's.
	require.NotContains(t, down, 1)
	port := serveOn(t, "127.0.0.1:0")
	hosts := []string{"127.0.0.1"}
	b := strings.Builder{}
	b.WriteString("127.0.0.1 slots=1\n")
	for i := 2; i <= n; i++ {
		h := fmt.Sprintf("127.0.0.%d", i)
		hosts = append(hosts, h)
		fmt.Fprintf(&b, "%s slots=1\n", h)
		if !slices.Contains(down, i) {
			serveOn(t, fmt.Sprintf("%s:%d", h, port))
		}
	}
	f.hostfile(b.String())
	f.env["TS_SSH_PORT"] = fmt.Sprint(port)
	return hosts
}

// launcherSweepsAndNamesTheMissing: one sweep a round tries every worker's
// ssh port; the progress lines name the worker still awaited, the give-up
// line names it as tried and not reachable; one login, no more.
func launcherSweepsAndNamesTheMissing(tool string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		linkTool(t, f, tool)
		hosts := loopbackWorkers(t, f, 3, 3)
		f.env["TS_INIT_TIMEOUT"] = "3"
		f.env["TS_EXEC"] = `touch "$TS_RUN_DIR/exec-ran"`
		code, p := f.run("launcher")
		out := p.output()
		require.Equal(t, 124, code, out)
		port := f.env["TS_SSH_PORT"]
		how := map[string]string{"python3": "by python3: 32 connections at a time", "bash": "32 at a time, by bash"}[tool]
		assert.Contains(t, out, "trainsonnet: tiers: wait="+tool+" serve-end=ssh hear-end=- watch=-\n", "TS_STOP_PORT=0: stop files")
		assert.Contains(t, out, "trainsonnet: waiting up to 3s for 3 workers to answer on ssh port "+port+", "+how)
		assert.Regexp(t, `(?m)^trainsonnet: 2 of 3 workers answered after \d+s; trying the other 1 again: 127\.0\.0\.3$`, out)
		assert.Contains(t, out, "trainsonnet: gave up after 3s waiting for workers; not reachable on ssh port "+port+": 127.0.0.3\n")
		assert.NoFileExists(t, filepath.Join(f.runDir, "exec-ran"))
		assert.Empty(t, f.hostsCalledWith("true"), "no ssh login when not every worker answered")
		assert.Equal(t, hosts[:2], f.hostsCalledWith(f.stopCommand()), "those that answered are told to stop (TS_STOP_PORT=0)")

		// All up: one login, to the first, then exec.
		serveOn(t, "127.0.0.3:"+port)
		code, p = f.run("launcher")
		require.Equal(t, 0, code, p.output())
		assert.FileExists(t, filepath.Join(f.runDir, "exec-ran"))
		assert.Equal(t, []string{"127.0.0.1"}, f.hostsCalledWith("true"), "one login, to the first worker")
	}
}

// launcherStuckSweepGoesOn: a sweeper that hangs on one worker (as a DNS
// lookup that never ends would) is stopped after STALL_MAX seconds; the
// worker counts as tried and failed, the sweep goes on after it, and the
// timeout names it.
func launcherStuckSweepGoesOn(t *testing.T, f *fixture) {
	// A python3 whose tcp.py sweep hangs on the target named "hang".
	f.write(filepath.Join(f.bin, "python3"), `#!/bin/sh
[ "$2" = check ] && exit 0
while read -r t; do
	case $t in hang*) exec sleep 1000 ;; esac
	echo "0 $t"
done <"$3"
`, 0o755)
	f.hostfile(worker0 + " slots=1\nhang slots=1\n" + worker1 + " slots=1\n")
	f.env["TS_TCP_TOOL"] = "python3"
	// Time for the stall (12 s, later on a busy machine) and a second round.
	f.env["TS_INIT_TIMEOUT"] = "20"
	f.env["TS_EXEC"] = "true"
	code, p, waited := f.runTimed("waiting up to 20s", "launcher")
	out := p.output()
	require.Equal(t, 124, code, out)
	assert.Less(t, waited, 20*time.Second+slack)
	assert.Regexp(t, `(?m)^trainsonnet: 2 of 3 workers answered after \d+s; trying the other 1 again: hang$`, out)
	assert.Contains(t, out, "trainsonnet: gave up after 20s waiting for workers; not reachable on ssh port 2022: hang\n")
}

// launcherStopPortWithPython3: once exec has ended, the launcher opens the
// stop port with python3; it answers with the stop banner and closes once
// every worker (here: two loopback addresses) has read it; the launcher
// then exits with exec's code. No worker is called over ssh.
func launcherStopPortWithPython3(t *testing.T, f *fixture) {
	linkTool(t, f, "python3")
	linkTool(t, f, "bash")
	loopbackWorkers(t, f, 2)
	stop := freePort(t)
	f.env["TS_STOP_PORT"] = fmt.Sprint(stop)
	f.env["TS_EXEC"] = "exit 3"
	p := f.start("launcher")
	p.waitForOutput(fmt.Sprintf("trainsonnet: the job is over: port %d says so for up to 24s; each of the 2 worker(s) reads it every 1s", stop))
	banner := stopBanner(t, f)
	assert.Equal(t, "SSH-2.0-trainsonnet "+banner, readLine(t, "127.0.0.1", stop))
	time.Sleep(300 * time.Millisecond)
	assert.False(t, p.exited(), "open until both have read it: %s", p.output())
	assert.Equal(t, "SSH-2.0-trainsonnet "+banner, readLine(t, "127.0.0.2", stop))
	t0 := time.Now()
	assert.Equal(t, 3, p.wait(), p.output())
	assert.Less(t, time.Since(t0), 7*time.Second, "closed once both have read it, not after its 8s (a loaded machine may take seconds)")
	assert.Contains(t, p.output(), fmt.Sprintf("trainsonnet: 2 of 2 worker(s) read port %d within ", stop))
	assert.Contains(t, p.output(), "by python3: 32 connections at a time, at most 500 started a second")
	assert.Contains(t, p.output(), "trainsonnet: tiers: wait=python3 serve-end=python3 hear-end=- watch=-\n")
	assert.Equal(t, []string{"127.0.0.1"}, f.hostsCalledWith("true"), "one login")
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "no worker called over ssh")
	messagesArePrefixed(t, p.output())
}

// launcherStopPortWithSSHD: without python3 the stop port is a second sshd
// whose banner carries the stop banner, read back (here with ssh -v, the
// last resort) before it counts; it stays open for the whole bound, then
// the launcher stops it and exits with exec's code.
func launcherStopPortWithSSHD(t *testing.T, f *fixture) {
	stop := freePort(t)
	f.env["TS_STOP_PORT"] = fmt.Sprint(stop)
	f.env["TS_EXEC"] = "exit 0"
	code, p, took := f.runTimed("TS_EXEC exited", "launcher")
	out := p.output()
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("trainsonnet: the job is over: port %d says so for up to 8s", stop))
	assert.GreaterOrEqual(t, took, 7*time.Second, "open for the whole bound")
	assert.Contains(t, out, "trainsonnet: tiers: wait=ssh serve-end=sshd hear-end=- watch=-\n", "no python3, no TCP tool")
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()), "no worker called over ssh")
	var server string
	for _, l := range f.lines("sshd.log") {
		if strings.HasPrefix(l, "start ") {
			server = l
		}
	}
	assert.Contains(t, server, fmt.Sprintf(" -p %d -o VersionAddendum=%s ", stop, stopBanner(t, f)))
	assert.Contains(t, strings.Join(f.lines("sshd.log"), "\n"), "stopped ", "the stop port's sshd stopped")
	assert.NoFileExists(t, filepath.Join(f.stub, "banners", fmt.Sprintf("127.0.0.1:%d", stop)))
}

// launcherStopPortTaken: a port something else holds is no stop port: the
// launcher says so and calls each worker over ssh instead.
func launcherStopPortTaken(t *testing.T, f *fixture) {
	linkTool(t, f, "python3")
	linkTool(t, f, "bash")
	hosts := loopbackWorkers(t, f, 2)
	stop := serveOn(t, "127.0.0.1:0") // closes connections without a word
	f.env["TS_STOP_PORT"] = fmt.Sprint(stop)
	f.env["TS_EXEC"] = "exit 0"
	code, p := f.run("launcher")
	require.Equal(t, 0, code, p.output())
	assert.Contains(t, p.output(), fmt.Sprintf("trainsonnet: could not open port %d with python3: ", stop))
	assert.Equal(t, hosts, f.hostsCalledWith(f.stopCommand()), "every worker called over ssh")
}

// launcherStopPortAfterAFailedWait: the workers that did answer a wait
// that failed learn from the stop port too; the launcher exits 124.
func launcherStopPortAfterAFailedWait(t *testing.T, f *fixture) {
	linkTool(t, f, "python3")
	linkTool(t, f, "bash")
	loopbackWorkers(t, f, 2, 2)
	stop := freePort(t)
	f.env["TS_STOP_PORT"] = fmt.Sprint(stop)
	f.env["TS_INIT_TIMEOUT"] = "2"
	f.env["TS_EXEC"] = "true"
	p := f.start("launcher")
	p.waitForOutput(fmt.Sprintf("port %d says so for up to 24s; each of the 1 worker(s)", stop))
	assert.Equal(t, "SSH-2.0-trainsonnet "+stopBanner(t, f), readLine(t, "127.0.0.1", stop))
	assert.Equal(t, 124, p.wait(), p.output())
	assert.Contains(t, p.output(), fmt.Sprintf("trainsonnet: 1 of 1 worker(s) read port %d within ", stop))
	assert.Empty(t, f.hostsCalledWith(f.stopCommand()))
}

// bannerServer answers every connection with the line in *line.
func bannerServer(t *testing.T, line *atomic.Value) int {
	t.Helper()
	return serve(t, "127.0.0.1:0", func(c net.Conn) {
		_, _ = c.Write([]byte(line.Load().(string) + "\r\n"))
	}).Port
}

// workerReadsTheStopPort: a worker reads the stop port at the address the
// launcher's name resolved to, every FINAL_EVERY seconds, and exits 0 once
// it holds the stop banner - not on another server's banner.
func workerReadsTheStopPort(tool string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		var line atomic.Value
		line.Store("SSH-2.0-OpenSSH_9.2p1 Debian-2")
		var port int
		switch tool {
		case "ssh": // the stub; its banner comes from a file
			port = freePort(t)
			require.NoError(t, os.MkdirAll(filepath.Join(f.stub, "banners"), 0o755))
			f.write(filepath.Join(f.stub, "banners", fmt.Sprintf("127.0.0.1:%d", port)), "OpenSSH_9.2p1 Debian-2", 0o644)
		default:
			linkTool(t, f, tool)
			if tool == "nc" {
				linkTool(t, f, "grep")
			}
			port = bannerServer(t, &line)
		}
		f.write(filepath.Join(f.stub, "dns", launcher), "127.0.0.1\n", 0o644)
		f.env["TS_STOP_PORT"] = fmt.Sprint(port)
		p := f.start("worker")
		p.waitForOutput(fmt.Sprintf("trainsonnet: the launcher says when the job is over on its port %d, read every 1s (with %s)", port, tool))
		p.waitForOutput("trainsonnet: tiers: wait=- serve-end=- hear-end=" + tool + " watch=getent\n")
		time.Sleep(2500 * time.Millisecond)
		require.False(t, p.exited(), "another server's banner is no stop: %s", p.output())
		banner := stopBanner(t, f)
		if tool == "ssh" {
			f.write(filepath.Join(f.stub, "banners", fmt.Sprintf("127.0.0.1:%d", port)), "trainsonnet "+banner, 0o644)
		} else {
			line.Store("SSH-2.0-trainsonnet " + banner)
		}
		said := time.Now()
		require.Equal(t, 0, p.wait(), p.output())
		assert.Less(t, time.Since(said), 2*time.Second+slack)
		assert.Contains(t, p.output(), fmt.Sprintf("trainsonnet: the launcher says the job is over (its port %d); exiting", port))
		assert.FileExists(t, filepath.Join(f.runDir, "finished"))
		messagesArePrefixed(t, p.output())
	}
}

func stopPortConfigurationErrors(t *testing.T, f *fixture) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TS_STOP_PORT": "ssh"}, "trainsonnet: TS_STOP_PORT must be a port number (0: none), got 'ssh'"},
		{map[string]string{"TS_STOP_PORT": "70000"}, "trainsonnet: TS_STOP_PORT must be a port number (0: none), got '70000'"},
		{map[string]string{"TS_STOP_PORT": "2022"}, "trainsonnet: TS_STOP_PORT must not be the ssh port, 2022"},
		{map[string]string{"TS_SSH_PORT": "x"}, "trainsonnet: TS_SSH_PORT must be a port number, got 'x'"},
		{map[string]string{"TS_TCP_TOOL": "perl"}, "trainsonnet: TS_TCP_TOOL must be python3, bash or nc, got 'perl'"},
	} {
		for _, role := range []string{"launcher", "worker"} {
			for k, v := range c.env {
				f.env[k] = v
			}
			code, p := f.run(role)
			assert.Equal(t, 2, code, "%s %v: %s", role, c.env, p.output())
			assert.Contains(t, p.output(), c.want, "%s %v", role, c.env)
			for k := range c.env {
				delete(f.env, k)
			}
			f.env["TS_STOP_PORT"] = "0"
		}
	}
	assert.Empty(t, f.lines("ssh.log"))
}

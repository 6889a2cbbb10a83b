package lib_test

// lib/assets/tcp.py, runtime.sh's python3 helper, run as the scripts run it
// (python3 tcp.py SUBCOMMAND ...), each subcommand against real sockets.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpPy runs tcp.py with args; it returns its exit code, stdout and stderr.
func tcpPy(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed (CI installs it)")
	}
	cmd := exec.Command(python, append([]string{filepath.Join("assets", "tcp.py")}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errOut.String()
}

func TestTCPPyUsage(t *testing.T) {
	code, _, _ := tcpPy(t, "check")
	assert.Equal(t, 0, code)
	for _, args := range [][]string{nil, {"sweep"}, {"ping", "a"}, {"banner", "h", "1"}} {
		code, _, stderr := tcpPy(t, args...)
		assert.Equal(t, 2, code, "%q", args)
		assert.Contains(t, stderr, "python3 tcp.py sweep FILE PORT LANES RATE DEADLINE MOST", "%q", args)
	}
}

// TestTCPPySweep: every target gets a line, 0 for the one that accepts and
// 1 for the one that refuses, HOST:PORT targets and bare hosts with PORT.
func TestTCPPySweep(t *testing.T) {
	open, closed := listen(t), closedPort(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "targets")
	require.NoError(t, os.WriteFile(file, []byte(open+"\n"+closed+"\n\n"), 0o600))
	deadline := fmt.Sprint(time.Now().Add(time.Minute).Unix())
	code, out, stderr := tcpPy(t, "sweep", file, "", "4", "500", deadline, "5")
	require.Equal(t, 0, code, stderr)
	assert.ElementsMatch(t, []string{"0 " + open, "1 " + closed}, strings.Split(strings.TrimSpace(out), "\n"))

	_, port, err := net.SplitHostPort(open)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, []byte("127.0.0.1\n"), 0o600))
	code, out, stderr = tcpPy(t, "sweep", file, port, "4", "500", deadline, "5")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "0 127.0.0.1\n", out)

	// Past the deadline: nothing is tried, nothing said.
	past := fmt.Sprint(time.Now().Add(-time.Second).Unix())
	code, out, stderr = tcpPy(t, "sweep", file, port, "4", "500", past, "5")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, out)
}

// TestTCPPyBanner: the first line a server sends; 1 when nothing listens.
func TestTCPPyBanner(t *testing.T) {
	addr := serve(t, "127.0.0.1:0", func(c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-x y\r\nmore\r\n")) })
	code, out, _ := tcpPy(t, "banner", "127.0.0.1", fmt.Sprint(addr.Port), "3")
	require.Equal(t, 0, code)
	assert.Equal(t, "SSH-2.0-x y\r\n", out)
	code, out, _ = tcpPy(t, "banner", "127.0.0.1", fmt.Sprint(freePort(t)), "3")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
}

// TestTCPPyServe: the end port answers each connection with its line; the
// lead's own first check from 127.0.0.1 is not a follower; it exits once
// the followers (distinct addresses) have read it, printing their number,
// or after LINGER seconds with those that did.
func TestTCPPyServe(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed (CI installs it)")
	}
	port := freePort(t)
	cmd := exec.Command(python, filepath.Join("assets", "tcp.py"), "serve", fmt.Sprint(port), "SSH-2.0-trainsonnet end", "2", "30")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	// That was the lead's own check (from 127.0.0.1).
	assert.Equal(t, "SSH-2.0-trainsonnet end", readLine(t, "127.0.0.2", port))
	assert.Equal(t, "SSH-2.0-trainsonnet end", readLine(t, "127.0.0.2", port), "the same follower twice counts once")
	assert.Equal(t, "SSH-2.0-trainsonnet end", readLine(t, "127.0.0.3", port))
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "2\n", line)
	require.NoError(t, cmd.Wait())

	// Nobody reads it: it ends after LINGER seconds, saying 0.
	start := time.Now()
	code, out, stderr := tcpPy(t, "serve", fmt.Sprint(freePort(t)), "x", "3", "1")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "0\n", out)
	assert.Less(t, time.Since(start), slack)
}

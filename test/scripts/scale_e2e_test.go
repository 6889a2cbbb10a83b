package scripts_test

// The launcher at the sizes the prototypes allow, and the ssh Secrets of
// the systems trainsonnet replaces. One sshd (a worker) serves every
// address of 127.0.0.0/8 in the launcher's network namespace, so a hostfile
// of N loopback addresses is N workers to the launcher: it probes them all,
// runs TS_EXEC and tells them all to stop. A sampler reads /proc meanwhile
// and reports the launcher's peak process count and resident memory (every
// process of its PID namespace; memory as Pss).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scaleLimit bounds one scale case: the wait alone is bounded by the
// default TS_INIT_TIMEOUT, 300 s.
const scaleLimit = 10 * time.Minute

func (l *lab) scale(t *testing.T, n int) {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "127.%d.%d.%d slots=1\n", 1+i/62500, i/250%250, 1+i%250)
	}
	hostfile := fmt.Sprintf("hostfile-%d", n)
	l.write(hostfile, b.String(), 0o644)
	env := l.rootEnv(t)
	// The default bound of the wait, as rendered.
	env["TS_INIT_TIMEOUT"] = "300"
	w := l.start(t, l.launcher, "worker", env, nil)
	w.waitForOutput(t, "serving ssh on port 2022")
	lp := l.start(t, l.launcher, "launcher", env, map[string]string{
		"TS_HOSTFILE": wsInside + "/" + hostfile, "TS_EXEC": "echo exec ran"})
	peak := sample(lp)
	select {
	case <-lp.done:
	case <-time.After(scaleLimit):
		t.Fatalf("launcher still running after %s:\n%s", scaleLimit, tail(lp.output()))
	}
	procs, rss, stopProcs := peak()
	out := lp.output()
	require.Equal(t, 0, lp.code, tail(out))
	m := regexp.MustCompile(`(?m)^trainsonnet: all (\d+) workers reachable after (\d+)s$`).FindStringSubmatch(out)
	require.NotNil(t, m, tail(out))
	assert.Equal(t, strconv.Itoa(n), m[1])
	secs, _ := strconv.Atoi(m[2])
	assert.Less(t, secs, 300, "all answered inside the default timeout")
	assert.Contains(t, out, fmt.Sprintf("telling %d worker(s) to stop, 32 at a time", n))
	// 32 probes or stop calls in flight, each a lane (sh), timeout and
	// bash or ssh, plus the launcher itself and a few helpers.
	assert.LessOrEqual(t, procs, 3*32+8, "processes bounded by TS_PARALLEL, not by the number of workers")
	t.Logf("%d workers: all answered after %ds; launcher peak %d processes (%d while stopping), %.1f MiB resident (Pss); whole run %s",
		n, secs, procs, stopProcs, float64(rss)/(1<<20), lp.took)
	select {
	case <-w.done:
	case <-time.After(procLimit):
		t.Fatalf("worker did not stop:\n%s", tail(w.output()))
	}
	assert.Equal(t, 0, w.code, tail(w.output()))
	l.assertNothingLeft(t)
}

var pssLine = regexp.MustCompile(`(?m)^Pss:\s+(\d+) kB`)

// sample reads /proc every 100 ms until p has exited; the function it
// returns gives the peak number of processes of p's PID namespace, their
// peak total resident memory in bytes, and the peak number while stopping
// the workers.
func sample(p *proc) func() (procs int, rss int64, stopping int) {
	var mu sync.Mutex
	var maxProcs, maxStop int
	var maxRSS int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		ns := ""
		for !p.exited() {
			time.Sleep(100 * time.Millisecond)
			if ns == "" {
				if pid := p.pid1(); pid > 0 {
					ns, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
				}
				continue
			}
			n, rss := 0, int64(0)
			dirs, _ := os.ReadDir("/proc")
			for _, d := range dirs {
				if _, err := strconv.Atoi(d.Name()); err != nil {
					continue
				}
				if l, _ := os.Readlink(filepath.Join("/proc", d.Name(), "ns/pid")); l != ns {
					continue
				}
				n++
				// Pss: resident memory with shared pages split among
				// their users (the sum of Rss would count each ssh's
				// libraries once per process).
				smaps, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "smaps_rollup"))
				if m := pssLine.FindSubmatch(smaps); m != nil {
					kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
					rss += kb << 10
				}
			}
			stopping := strings.Contains(p.output(), "to stop, ")
			mu.Lock()
			maxProcs, maxRSS = max(maxProcs, n), max(maxRSS, rss)
			if stopping {
				maxStop = max(maxStop, n)
			}
			mu.Unlock()
		}
	}()
	return func() (int, int64, int) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return maxProcs, maxRSS, maxStop
	}
}

// tail: the last lines of a long log.
func tail(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 60 {
		lines = append([]string{"[...]"}, lines[len(lines)-60:]...)
	}
	return strings.Join(lines, "\n")
}

// kubeflowSecret: the launcher and two workers with a Kubeflow-era ssh
// Secret (id_rsa, id_rsa.pub, authorized_keys) instead of a
// kubernetes.io/ssh-auth one.
func (l *lab) kubeflowSecret(t *testing.T) {
	kd := filepath.Join(l.work, "keys-kubeflow")
	require.NoError(t, os.MkdirAll(kd, 0o755))
	out, err := exec.Command("ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-C", "kubeflow", "-f", filepath.Join(kd, "id_rsa")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	pub, err := os.ReadFile(filepath.Join(kd, "id_rsa.pub"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(kd, "authorized_keys"), pub, 0o400))
	for _, f := range []string{"id_rsa", "id_rsa.pub"} {
		require.NoError(t, os.Chmod(filepath.Join(kd, f), 0o400))
	}
	env := l.rootEnv(t)
	env["TS_KEY_DIR"] = wsInside + "/keys-kubeflow"
	ws := l.startWorkers(t, env, 2)
	lp := l.start(t, l.launcher, "launcher", env, mpirunEnv(`mpirun -np 2 --hostfile "$TS_HOSTFILE" hostname`))
	require.Equal(t, 0, lp.wait(t), lp.output())
	for _, w := range l.workers {
		assert.Contains(t, strings.Split(lp.output(), "\n"), w.name, "mpirun ran on %s", w.name)
	}
	for _, w := range ws {
		assert.Equal(t, 0, w.wait(t), w.output())
	}
	l.assertNothingLeft(t)

	// A Secret with neither kind of key: one line that says what it needs.
	require.NoError(t, os.MkdirAll(filepath.Join(l.work, "keys-none"), 0o755))
	env["TS_KEY_DIR"] = wsInside + "/keys-none"
	lp = l.start(t, l.launcher, "launcher", env, map[string]string{"TS_EXEC": "true"})
	assert.Equal(t, 2, lp.wait(t), lp.output())
	assert.Contains(t, lp.output(), "trainsonnet: no ssh key in "+wsInside+"/keys-none (TS_KEY_DIR): the Secret needs the keys ssh-privatekey and ssh-publickey, or id_rsa and id_rsa.pub (and optionally authorized_keys)\n")
	l.assertNothingLeft(t)
}

package scripts_test

// The launcher at the sizes the prototypes allow, and the ssh Secrets of
// the systems trainsonnet replaces. One sshd (a worker) serves every
// address of 127.0.0.0/8 in the launcher's network namespace, so a hostfile
// of N loopback addresses is N workers to the launcher: it sweeps them all,
// logs in to one, runs TS_EXEC and opens its stop port, which the worker
// reads as every one of the N would. A sampler reads /proc meanwhile and
// reports the launcher's peak process count and resident memory (every
// process of its PID namespace; memory as Pss). `make bench-runtime`
// (test/benchruntime) times the same run.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/scripts"
)

// scaleLimit bounds one scale case: the wait alone is bounded by the
// default TS_INIT_TIMEOUT, 300 s.
const scaleLimit = 10 * time.Minute

func scale(t *testing.T, l *scripts.Lab, n int) {
	hostfile := l.LoopbackHostfile(n)
	env := l.RootEnv(t)
	// The defaults, as rendered; every pod reads the same hostfile.
	env["TS_INIT_TIMEOUT"] = "300"
	delete(env, "TS_POLL_INTERVAL")
	env["TS_HOSTFILE"] = hostfile
	w := l.Start(t, l.Launcher, "worker", env, nil)
	w.WaitForOutput(t, "serving ssh on port 2022")
	lp := l.Start(t, l.Launcher, "launcher", env, map[string]string{"TS_EXEC": "echo exec ran"})
	peak := scripts.Sample(lp, "the job is over")
	select {
	case <-lp.Done():
	case <-time.After(scaleLimit):
		t.Fatalf("launcher still running after %s:\n%s", scaleLimit, scripts.Tail(lp.Output()))
	}
	p := peak()
	out := lp.Output()
	require.Equal(t, 0, lp.Code, scripts.Tail(out))
	m := regexp.MustCompile(`(?m)^trainsonnet: all (\d+) workers reachable after (\d+)s$`).FindStringSubmatch(out)
	require.NotNil(t, m, scripts.Tail(out))
	assert.Equal(t, strconv.Itoa(n), m[1])
	secs, _ := strconv.Atoi(m[2])
	assert.Less(t, secs, 300, "all answered inside the default timeout")
	assert.Contains(t, out, fmt.Sprintf("waiting up to 300s for %d workers to answer on ssh port 2022, by python3: 32 connections at a time", n))
	every := max(2, n/250)
	// (python3 serves it: three times the bound, closed once every worker has read it)
	assert.Contains(t, out, fmt.Sprintf("trainsonnet: the job is over: port 2023 says so for up to %ds; each of the %d worker(s) reads it every %ds", 3*(every+2+3+3), n, every))
	// The launcher itself, one sweeper (python3) and its stall watch with
	// its sleep, date or wc; then the stop port's server and a sleep.
	assert.LessOrEqual(t, p.Procs, 8, "processes bounded, not growing with the workers")
	t.Logf("%d workers: all answered after %ds; launcher peak %d processes (%d once the job was over), %.1f MiB resident (Pss); whole run %s",
		n, secs, p.Procs, p.ProcsAfterMarker, float64(p.Pss)/(1<<20), lp.Took)
	select {
	case <-w.Done():
	case <-time.After(scripts.ProcLimit):
		t.Fatalf("worker did not stop:\n%s", scripts.Tail(w.Output()))
	}
	assert.Equal(t, 0, w.Code, scripts.Tail(w.Output()))
	assert.Contains(t, w.Output(), "trainsonnet: the launcher says the job is over (its port 2023); exiting")
	assert.True(t, !w.Ended.After(lp.Ended), "the worker ended before the launcher closed its stop port")
	l.AssertNothingLeft(t)
}

// kubeflowSecret: the launcher and two workers with a Kubeflow-era ssh
// Secret (id_rsa, id_rsa.pub, authorized_keys) instead of a
// kubernetes.io/ssh-auth one.
func kubeflowSecret(t *testing.T, l *scripts.Lab) {
	kd := filepath.Join(l.Work, "keys-kubeflow")
	require.NoError(t, os.MkdirAll(kd, 0o755))
	out, err := exec.Command("ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-C", "kubeflow", "-f", filepath.Join(kd, "id_rsa")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	pub, err := os.ReadFile(filepath.Join(kd, "id_rsa.pub"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(kd, "authorized_keys"), pub, 0o400))
	for _, f := range []string{"id_rsa", "id_rsa.pub"} {
		require.NoError(t, os.Chmod(filepath.Join(kd, f), 0o400))
	}
	env := l.RootEnv(t)
	env["TS_KEY_DIR"] = scripts.WSInside + "/keys-kubeflow"
	ws := l.StartWorkers(t, env, 2)
	lp := l.Start(t, l.Launcher, "launcher", env, scripts.MPIRunEnv(`mpirun -np 2 --hostfile "$TS_HOSTFILE" hostname`))
	require.Equal(t, 0, lp.Wait(t), lp.Output())
	for _, w := range l.Workers {
		assert.Contains(t, strings.Split(lp.Output(), "\n"), w.Name, "mpirun ran on %s", w.Name)
	}
	for _, w := range ws {
		assert.Equal(t, 0, w.Wait(t), w.Output())
	}
	l.AssertNothingLeft(t)

	// A Secret with neither kind of key: one line that says what it needs.
	require.NoError(t, os.MkdirAll(filepath.Join(l.Work, "keys-none"), 0o755))
	env["TS_KEY_DIR"] = scripts.WSInside + "/keys-none"
	lp = l.Start(t, l.Launcher, "launcher", env, map[string]string{"TS_EXEC": "true"})
	assert.Equal(t, 2, lp.Wait(t), lp.Output())
	assert.Contains(t, lp.Output(), "trainsonnet: no ssh key in "+scripts.WSInside+"/keys-none (TS_KEY_DIR): the Secret needs the keys ssh-privatekey and ssh-publickey, or id_rsa and id_rsa.pub (and optionally authorized_keys)\n")
	l.AssertNothingLeft(t)
}

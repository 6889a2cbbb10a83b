package scripts_test

// Real-process tests of lib/assets/mpi.sh (with runtime.sh, and the ssh
// configuration trainsonnet renders into the ConfigMap): real sshd, ssh and
// Open MPI's mpirun, on three "hosts" made of Linux namespaces, with no
// Kubernetes (the lab of lab.go).
//
// Run with: TRAINSONNET_E2E=1 go test ./test/scripts/ (as root). Needs the
// Debian packages openmpi-bin openssh-server openssh-client pdsh iproute2
// (and util-linux, present on every Debian).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainsonnet/trainsonnet/generator"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
	"github.com/trainsonnet/trainsonnet/test/scripts"
)

func TestMPIScriptWithRealSSHAndMPI(t *testing.T) {
	if os.Getenv("TRAINSONNET_E2E") != "1" {
		t.Skip("real-process test: set TRAINSONNET_E2E=1 (needs root and the Debian packages " +
			"openmpi-bin openssh-server openssh-client pdsh iproute2)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates network namespaces, a bridge and mounts")
	}
	if missing := scripts.Missing(); len(missing) > 0 {
		t.Skipf("missing %s (apt-get install openmpi-bin openssh-server openssh-client pdsh iproute2)",
			strings.Join(missing, ", "))
	}
	if dir, _ := filepath.EvalSymlinks("/var/run"); dir != "/run" {
		t.Skip("/var/run is not /run here: the rendered run dir would not be on the hosts' tmpfs")
	}

	l := scripts.NewLab(t, 2, "")
	l.Verbose = testing.Verbose()

	t.Run("mpirun across two workers as root", func(t *testing.T) {
		mpirunAcrossWorkers(t, l, l.RootEnv(t), "root")
	})
	t.Run("a worker's sshd that answers late costs a wait, not the job", func(t *testing.T) {
		slowSSHD(t, l)
	})
	t.Run("a worker cut off ends mpirun within about a minute", func(t *testing.T) {
		cutOffWorker(t, l)
	})
	t.Run("the launcher as worker 0 of an Indexed Job, ended by the Job controller", func(t *testing.T) {
		launcherAsWorker(t, l)
	})
	t.Run("exec exit code is the launcher's", func(t *testing.T) {
		env := l.RootEnv(t)
		ws := l.StartWorkers(t, env, 2)
		lp := l.Start(t, l.Launcher, "launcher", env, map[string]string{"TS_EXEC": "exit 3"})
		assert.Equal(t, 3, lp.Wait(t), lp.Output())
		for _, w := range ws {
			assert.Equal(t, 0, w.Wait(t), "worker stops by itself: %s", w.Output())
		}
		l.AssertNothingLeft(t)
	})
	t.Run("missing worker", func(t *testing.T) {
		env := l.RootEnv(t)
		ws := l.StartWorkers(t, env, 1)
		lp := l.Start(t, l.Launcher, "launcher", env, map[string]string{
			"TS_EXEC": "touch /run/trainsonnet/exec-ran", "TS_INIT_TIMEOUT": "5"})
		lp.WaitForOutput(t, "trainsonnet: waiting up to 5s")
		t0 := time.Now()
		code := lp.Wait(t)
		out := lp.Output()
		require.Equal(t, 124, code, out)
		assert.Less(t, time.Since(t0), 5*time.Second+5*time.Second, "bounded by TS_INIT_TIMEOUT")
		m := regexp.MustCompile(`(?m)^trainsonnet: gave up after 5s waiting for workers; not reachable [^:]*port 2022: (.*)$`).
			FindStringSubmatch(out)
		require.NotNil(t, m, out)
		assert.Equal(t, l.Workers[1].FQDN, m[1], "names exactly the missing worker")
		assert.NotContains(t, out, "running TS_EXEC")
		// The worker that answered learns from the stop port that the job
		// is over, and the launcher waits until it has.
		assert.Contains(t, out, "trainsonnet: 1 of 1 worker(s) read port 2023 within ")
		assert.Equal(t, 0, ws[0].Wait(t), ws[0].Output())
		assert.Contains(t, ws[0].Output(), "trainsonnet: the launcher says the job is over (its port 2023); exiting")
		l.AssertNothingLeft(t)
	})
	t.Run("a worker left up for a retry ends with a pod deletion", func(t *testing.T) {
		env := l.RootEnv(t)
		ws := l.StartWorkers(t, env, 2)
		lp := l.Start(t, l.Launcher, "launcher", env, map[string]string{
			"TS_EXEC": "exit 5", "TS_END_ON_FAILURE": "0"})
		assert.Equal(t, 5, lp.Wait(t), lp.Output())
		assert.NotContains(t, lp.Output(), "the job is over")
		// Still serving (the launcher's name still resolves here); a pod
		// deletion ends it.
		time.Sleep(2 * time.Second)
		for _, w := range ws {
			require.False(t, w.Exited(), w.Output())
			w.Signal(t, syscall.SIGTERM)
			assert.Equal(t, 143, w.Wait(t), w.Output())
		}
		l.AssertNothingLeft(t)
	})
	t.Run("ranks started over ssh see their worker's env", func(t *testing.T) {
		// sshd hands sessions a bare environment; TS_SSH_ENV makes the
		// worker's own values (here different per worker, with a quote
		// and a blank) reach the ranks mpirun starts there.
		env := l.RootEnv(t)
		var ws []*scripts.Proc
		for _, w := range l.Workers[:2] {
			ws = append(ws, l.Start(t, w, "worker", env, map[string]string{
				"TS_SSH_ENV": "ROLE_VALUE", "ROLE_VALUE": "it's " + w.Name}))
		}
		// Then scp (the sftp protocol, an sshd subsystem) still works
		// through the session script: a file copied to worker 0 and read
		// back over ssh.
		w0, cfg := l.Workers[0].FQDN, scripts.ConfigInside+"/ssh_config"
		extra := scripts.MPIRunEnv(`mpirun -np 2 --hostfile "$TS_HOSTFILE" sh -c 'echo "rank on $(hostname): $ROLE_VALUE"' &&
echo copied-over-sftp >/run/trainsonnet/scp-src &&
scp -q -F ` + cfg + ` /run/trainsonnet/scp-src ` + w0 + `:/run/trainsonnet/scp-dst &&
ssh -n -F ` + cfg + ` ` + w0 + ` cat /run/trainsonnet/scp-dst`)
		extra["ROLE_VALUE"] = "the launcher's, not to be seen by the ranks"
		lp := l.Start(t, l.Launcher, "launcher", env, extra)
		code := lp.Wait(t)
		out := lp.Output()
		require.Equal(t, 0, code, out)
		lines := strings.Split(out, "\n")
		for _, w := range l.Workers[:2] {
			assert.Contains(t, lines, "rank on "+w.Name+": it's "+w.Name, out)
		}
		assert.Contains(t, lines, "copied-over-sftp", "scp to a worker with TS_SSH_ENV, read back over ssh")
		for _, w := range ws {
			assert.Equal(t, 0, w.Wait(t), "worker stops by itself: %s", w.Output())
		}
		l.AssertNothingLeft(t)
	})
	t.Run("mpirun across two workers as a non-root user, tree spawn", func(t *testing.T) {
		// routed_radix=1: mpirun starts the daemon of worker-0 only, which
		// starts worker-1's over ssh with the same rendered client config.
		mpirunAcrossWorkers(t, l, l.UserEnv(t), "tse2e", "OMPI_MCA_routed_radix", "1")
	})
	t.Run("a Kubeflow-era ssh Secret", func(t *testing.T) { kubeflowSecret(t, l) })
	t.Run("pdsh as DeepSpeed's runner calls it, with the rendered PDSH_SSH_ARGS", func(t *testing.T) { pdshAsDeepSpeed(t, l) })
	for _, n := range scaleSizes() {
		t.Run(fmt.Sprintf("%d workers", n), func(t *testing.T) { scale(t, l, n) })
	}
}

// scaleSizes: the numbers of workers of the scale cases; TS_E2E_SCALE
// (e.g. "1000 5000 10000") replaces the default.
func scaleSizes() []int {
	spec := os.Getenv("TS_E2E_SCALE")
	if spec == "" {
		spec = "1000 5000"
	}
	var ns []int
	for _, f := range strings.Fields(spec) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			ns = append(ns, n)
		}
	}
	return ns
}

// mpirunAcrossWorkers: the launcher waits for both workers, mpirun runs
// `hostname` on them, and the workers end by themselves once the
// launcher's stop port says so; all as user. extra are more variables of
// the launcher, as name, value pairs.
func mpirunAcrossWorkers(t *testing.T, l *scripts.Lab, env map[string]string, user string, extra ...string) {
	ws := l.StartWorkers(t, env, 2)
	lenv := scripts.MPIRunEnv(`echo "launcher user: $(id -un)"; mpirun -np 2 --hostfile "$TS_HOSTFILE" hostname`)
	for i := 0; i+1 < len(extra); i += 2 {
		lenv[extra[i]] = extra[i+1]
	}
	lp := l.Start(t, l.Launcher, "launcher", env, lenv)
	code := lp.Wait(t)
	out := lp.Output()
	require.Equal(t, 0, code, out)
	lines := strings.Split(out, "\n")
	for _, w := range l.Workers {
		assert.Contains(t, lines, w.Name, "mpirun ran on %s", w.Name)
	}
	assert.Contains(t, out, "trainsonnet: all 2 workers reachable after ")
	assert.Contains(t, lines, "launcher user: "+user)
	for _, w := range ws {
		assert.Equal(t, 0, w.Wait(t), "worker stops by itself: %s", w.Output())
		assert.Contains(t, w.Output(), "serving ssh on port 2022 as user "+user+"\n")
		assert.Contains(t, w.Output(), "trainsonnet: the launcher says the job is over (its port 2023); exiting")
	}
	l.AssertNothingLeft(t)
}

// slowSSHD: mpirun starts its daemons over ssh while worker 1's sshd
// answers nothing for 15 s (stopped, as a busy node's sshd that the kernel
// still accepts connections for), three times the 5 s the client's
// ConnectTimeout was when that failed a job on a loaded CI machine
// ("Connection timed out during banner exchange"): the job waits and
// succeeds.
func slowSSHD(t *testing.T, l *scripts.Lab) {
	const stopped = 15 * time.Second
	env := l.RootEnv(t)
	ws := l.StartWorkers(t, env, 2)
	lp := l.Start(t, l.Launcher, "launcher", env, scripts.MPIRunEnv(
		`while [ ! -e /run/ws/sshd-slow ]; do sleep 0.2; done; mpirun -np 2 --hostfile "$TS_HOSTFILE" hostname`))
	lp.WaitForOutput(t, "trainsonnet: running TS_EXEC")
	sshd := ws[1].SSHD(t)
	require.NoError(t, syscall.Kill(sshd, syscall.SIGSTOP))
	resume := func() { _ = syscall.Kill(sshd, syscall.SIGCONT) }
	t.Cleanup(resume)
	marker := l.Write("sshd-slow", "", 0o644)
	t.Cleanup(func() { _ = os.Remove(marker) })
	time.Sleep(stopped)
	resume()
	code := lp.Wait(t)
	out := lp.Output()
	require.Equal(t, 0, code, out)
	lines := strings.Split(out, "\n")
	for _, w := range l.Workers {
		assert.Contains(t, lines, w.Name, "mpirun ran on %s", w.Name)
	}
	assert.Greater(t, lp.Took, stopped, "mpirun waited for the stopped sshd")
	for _, w := range ws {
		assert.Equal(t, 0, w.Wait(t), "worker stops by itself: %s", w.Output())
	}
	l.AssertNothingLeft(t)
}

// cutOffWorker: while the ranks run, worker 1 is cut off the network
// (every packet lost, as a partition does). mpirun's ssh session to it
// hears nothing for ServerAliveInterval × ServerAliveCountMax (60 s) and
// ends; mpirun counts that daemon failed and aborts, and the launcher
// fails: within about a minute, where it waited on the kernel's
// retransmissions before (tcp_retries2, about 15 minutes).
func cutOffWorker(t *testing.T, l *scripts.Lab) {
	env := l.RootEnv(t)
	ws := l.StartWorkers(t, env, 2)
	lp := l.Start(t, l.Launcher, "launcher", env, scripts.MPIRunEnv(
		`mpirun -np 2 --hostfile "$TS_HOSTFILE" sh -c 'echo "rank up on $(hostname)"; sleep 600'`))
	for _, w := range l.Workers[:2] {
		lp.WaitForOutput(t, "rank up on "+w.Name)
	}
	uncut := l.CutOff(t, l.Workers[1])
	t.Cleanup(uncut)
	cut := time.Now()
	select {
	case <-lp.Done():
	case <-time.After(150 * time.Second):
		t.Fatalf("mpirun still runs %s after worker 1 was cut off:\n%s", time.Since(cut).Round(time.Second), lp.Output())
	}
	took := time.Since(cut).Round(time.Second)
	t.Logf("the launcher ended %s after worker 1 was cut off (exit %d)", took, lp.Code)
	assert.NotEqual(t, 0, lp.Code, lp.Output())
	assert.GreaterOrEqual(t, took, 45*time.Second, "no alarm before the peer has been silent for the probes' minute")
	// Worker 0 heard that the job is over; worker 1, cut off, did not.
	assert.Equal(t, 0, ws[0].Wait(t), ws[0].Output())
	uncut()
	ws[1].Signal(t, syscall.SIGTERM)
	ws[1].Wait(t)
	l.AssertNothingLeft(t)
}

// launcherAsWorker: openmpi's launcherAsWorker shape, as the pods of its
// one Indexed Job run it (mpi.sh indexed, TS_END_BY=job): index 0 is the
// launcher and a rank (TS_SELF), waits for worker 1, runs mpirun across
// both and exits with its code, telling nobody (no end port, no stop
// file); worker 1 serves on until the Job controller stops it, as it does
// once index 0 has succeeded (SIGTERM: 143, a pod of a Job already
// complete).
func launcherAsWorker(t *testing.T, l *scripts.Lab) {
	env := l.RootEnv(t)
	w0, w1 := l.Workers[0], l.Workers[1]
	shape := map[string]string{"TS_END_BY": "job", "TS_LAUNCHER": w0.FQDN}
	worker := map[string]string{"JOB_COMPLETION_INDEX": "1"}
	for k, v := range shape {
		worker[k] = v
	}
	wp := l.Start(t, w1, "indexed", env, worker)
	lead := scripts.MPIRunEnv(`mpirun -np 2 --hostfile "$TS_HOSTFILE" hostname`)
	lead["JOB_COMPLETION_INDEX"], lead["TS_SELF"] = "0", w0.FQDN
	for k, v := range shape {
		lead[k] = v
	}
	lp := l.Start(t, w0, "indexed", env, lead)
	code := lp.Wait(t)
	out := lp.Output()
	require.Equal(t, 0, code, out)
	lines := strings.Split(out, "\n")
	assert.Contains(t, lines, w0.Name, "a rank on worker 0, the launcher's own host")
	assert.Contains(t, lines, w1.Name, "a rank on worker 1")
	assert.Contains(t, out, "trainsonnet: tiers: wait=python3 serve-end=job hear-end=- watch=-\n")
	assert.NotContains(t, out, "the job is over", "no end port")
	time.Sleep(3 * time.Second)
	require.False(t, wp.Exited(), "worker 1 is the Job controller's to stop: %s", wp.Output())
	assert.Contains(t, wp.Output(), "trainsonnet: tiers: wait=- serve-end=- hear-end=- watch=getent\n")
	wp.Signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, wp.Wait(t), wp.Output())
	l.AssertNothingLeft(t)
}

// pdshAsDeepSpeed runs the real pdsh as DeepSpeed's runner does
// (PDSH_RCMD_TYPE=ssh, pdsh -S -f 1024 -w <hosts> <command>) from the
// launcher, with PDSH_SSH_ARGS as the deepspeed prototype renders it on
// its launcher, as root and as a user: pdsh fills in %u and %h and reaches
// each worker with the job's ssh configuration (its port, its key), and
// labels each line with the worker's short name. The lab's configuration is
// openmpi's, which is deepspeed's byte for byte (both are sshjob's).
func pdshAsDeepSpeed(t *testing.T, l *scripts.Lab) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	res, err := g.Render(context.Background(), generator.NewParams("deepspeed").Set("name", "e2e").Set("ssh.secret", "e2e-ssh"))
	require.NoError(t, err)
	var args string
	for _, o := range res.Objects {
		var obj struct {
			Kind string
			Data map[string]string
			Spec struct {
				Template struct {
					Spec corev1.PodSpec
				}
			}
		}
		require.NoError(t, json.Unmarshal(o.JSON(), &obj))
		if obj.Kind == "ConfigMap" && obj.Data["ssh_config"] != "" {
			require.Equal(t, scripts.RenderedConfig(t)["ssh_config"], obj.Data["ssh_config"], "deepspeed's ssh_config is the lab's (openmpi's)")
		}
		for _, c := range obj.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "PDSH_SSH_ARGS" {
					args = e.Value
				}
			}
		}
	}
	require.Contains(t, args, "/etc/trainsonnet/ssh_config", "the rendered PDSH_SSH_ARGS")
	// the ConfigMap's mount in the lab's hosts
	args = strings.ReplaceAll(args, "/etc/trainsonnet/", scripts.ConfigInside+"/")
	hosts := l.Workers[0].FQDN + "," + l.Workers[1].FQDN
	for _, c := range []struct {
		name, user string
		env        map[string]string
	}{{"root", "root", l.RootEnv(t)}, {"a user", "tse2e", l.UserEnv(t)}} {
		t.Run(c.name, func(t *testing.T) {
			ws := l.StartWorkers(t, c.env, 2)
			lp := l.Start(t, l.Launcher, "launcher", c.env, map[string]string{
				"TS_EXEC":        "pdsh -S -f 1024 -w " + hosts + ` 'echo "pdsh as $(id -un) on $(hostname)"'`,
				"PDSH_RCMD_TYPE": "ssh",
				"PDSH_SSH_ARGS":  args,
			})
			code := lp.Wait(t)
			out := lp.Output()
			require.Equal(t, 0, code, out)
			lines := strings.Split(out, "\n")
			for _, w := range l.Workers[:2] {
				// pdsh labels each line with the host name up to its first dot
				assert.Contains(t, lines, w.Name+": pdsh as "+c.user+" on "+w.Name, out)
			}
			for _, w := range ws {
				assert.Equal(t, 0, w.Wait(t), "worker stops by itself: %s", w.Output())
			}
			l.AssertNothingLeft(t)
		})
	}
}

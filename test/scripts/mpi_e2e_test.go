package scripts_test

// Real-process test of lib/assets/mpi.sh (with runtime.sh, and the ssh
// configuration trainsonnet renders into the ConfigMap): real sshd, ssh and
// Open MPI's mpirun, on three "hosts" made of Linux namespaces, with no
// Kubernetes.
//
// Each host is a network namespace on a private bridge (no address on the
// bridge, so nothing is routed to or from the machine) plus, per process
// tree, its own PID namespace (mpi.sh is PID 1, as in a container), UTS
// namespace (so `hostname` differs) and mount namespace in which private
// tmpfs mounts stand in for the pod's filesystem: /run (with
// the run dir, like an emptyDir, and sshd's privilege separation
// directory), /tmp and /dev/shm (Open MPI's session files), and bind mounts
// of a generated /etc/hosts (the headless Service's DNS names) and, for the
// non-root case, /etc/passwd and /etc/group with a test user. The work
// directory is visible inside as /run/ws; its config/ holds the ConfigMap of
// a job rendered by trainsonnet (the scripts, ssh_config, sshd_config) with
// this test's hostfile. The run dir is the pods' own, /var/run/trainsonnet,
// which the rendered configuration names (/var/run is /run on Debian).
// Nothing outside the test's own namespaces, bridge, veths and temp dir is
// touched.
//
// Run with: TRAINSONNET_E2E=1 go test ./test/scripts/ (as root). Needs the
// Debian packages openmpi-bin openssh-server openssh-client iproute2 (and
// util-linux, present on every Debian).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

const (
	subnet   = "10.251.77" // only inside this test's namespaces
	wsInside = "/run/ws"   // where the work dir appears inside a host
	// configInside is the ConfigMap's mount in a host.
	configInside = wsInside + "/config"
	runDir       = "/var/run/trainsonnet" // the pods' run dir, as rendered
	// procLimit: any single process of this test is killed after this long.
	procLimit = 90 * time.Second
	sysPath   = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// hostSetup runs as root inside fresh mount, UTS and PID namespaces of a
// host, then becomes the pod's process: mpi.sh <role>, as root or as
// E2E_UID.
const hostSetup = `set -eu
mount -t tmpfs -o mode=0755 ts-run /run
mkdir /run/ws
mount --bind "$E2E_WORK" /run/ws
mount -t tmpfs -o mode=1777 ts-tmp /tmp
mount -t tmpfs -o mode=1777 ts-shm /dev/shm
mkdir -m 0777 /run/trainsonnet
mount --bind /run/ws/hosts /etc/hosts
if [ -n "${E2E_UID:-}" ]; then
	mount --bind /run/ws/passwd /etc/passwd
	mount --bind /run/ws/group /etc/group
elif [ -e /run/ws/passwd-root ]; then
	mount --bind /run/ws/passwd-root /etc/passwd
fi
hostname "$E2E_HOSTNAME"
cd /run/trainsonnet
uid=${E2E_UID:-} gid=${E2E_GID:-} key_gid=${E2E_KEY_GID:-}
unset E2E_WORK E2E_HOSTNAME E2E_UID E2E_GID E2E_KEY_GID
if [ -n "$uid" ]; then
	exec setpriv --reuid="$uid" --regid="$gid" --groups="$key_gid" -- sh /run/ws/config/mpi.sh "$1"
fi
exec sh /run/ws/config/mpi.sh "$1"
`

var requiredTools = []string{"ip", "mpirun", "ssh", "ssh-keygen", "unshare", "setpriv", "mount", "hostname", "getent"}

// host is one simulated pod.
type host struct {
	name string // short host name, e.g. tsm1a2b-worker-0
	fqdn string // hostfile / DNS name, e.g. tsm1a2b-worker-0.tsm1a2b
	ns   string // network namespace
	veth string // host side of its veth pair
	ip   string
}

// lab is the bridge, the namespaces and the work dir shared by all cases.
type lab struct {
	t        *testing.T
	job      string
	work     string
	bridge   string
	launcher host
	workers  []host
}

func TestMPIScriptWithRealSSHAndMPI(t *testing.T) {
	if os.Getenv("TRAINSONNET_E2E") != "1" {
		t.Skip("real-process test: set TRAINSONNET_E2E=1 (needs root and the Debian packages " +
			"openmpi-bin openssh-server openssh-client iproute2)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates network namespaces, a bridge and mounts")
	}
	var missing []string
	for _, tool := range requiredTools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := os.Stat(sshdPath()); err != nil {
		missing = append(missing, "sshd")
	}
	if len(missing) > 0 {
		t.Skipf("missing %s (apt-get install openmpi-bin openssh-server openssh-client iproute2)",
			strings.Join(missing, ", "))
	}
	if dir, _ := filepath.EvalSymlinks("/var/run"); dir != "/run" {
		t.Skip("/var/run is not /run here: the rendered run dir would not be on the hosts' tmpfs")
	}

	l := newLab(t)

	t.Run("mpirun across two workers as root", func(t *testing.T) {
		l.mpirunAcrossWorkers(t, l.rootEnv(t), "root")
	})
	t.Run("exec exit code is the launcher's", func(t *testing.T) {
		env := l.rootEnv(t)
		ws := l.startWorkers(t, env, 2)
		lp := l.start(t, l.launcher, "launcher", env, map[string]string{"TS_EXEC": "exit 3"})
		assert.Equal(t, 3, lp.wait(t), lp.output())
		for _, w := range ws {
			assert.Equal(t, 0, w.wait(t), "worker stops by itself: %s", w.output())
		}
		l.assertNothingLeft(t)
	})
	t.Run("missing worker", func(t *testing.T) {
		env := l.rootEnv(t)
		ws := l.startWorkers(t, env, 1)
		lp := l.start(t, l.launcher, "launcher", env, map[string]string{
			"TS_EXEC": "touch /run/trainsonnet/exec-ran", "TS_INIT_TIMEOUT": "5"})
		lp.waitForOutput(t, "trainsonnet: waiting up to 5s")
		t0 := time.Now()
		code := lp.wait(t)
		out := lp.output()
		require.Equal(t, 124, code, out)
		assert.Less(t, time.Since(t0), 5*time.Second+5*time.Second, "bounded by TS_INIT_TIMEOUT")
		m := regexp.MustCompile(`(?m)^trainsonnet: gave up after 5s waiting for workers; not reachable [^:]*port 2022: (.*)$`).
			FindStringSubmatch(out)
		require.NotNil(t, m, out)
		assert.Equal(t, l.workers[1].fqdn, m[1], "names exactly the missing worker")
		assert.NotContains(t, out, "running TS_EXEC")
		// The started worker is still serving (its launcher name still
		// resolves here); a pod deletion ends it.
		require.False(t, ws[0].exited())
		ws[0].signal(t, syscall.SIGTERM)
		assert.Equal(t, 143, ws[0].wait(t), ws[0].output())
		l.assertNothingLeft(t)
	})
	t.Run("ranks started over ssh see their worker's env", func(t *testing.T) {
		// sshd hands sessions a bare environment; TS_SSH_ENV makes the
		// worker's own values (here different per worker, with a quote
		// and a blank) reach the ranks mpirun starts there.
		env := l.rootEnv(t)
		var ws []*proc
		for _, w := range l.workers[:2] {
			ws = append(ws, l.start(t, w, "worker", env, map[string]string{
				"TS_SSH_ENV": "ROLE_VALUE", "ROLE_VALUE": "it's " + w.name}))
		}
		// Then scp (the sftp protocol, an sshd subsystem) still works
		// through the session script: a file copied to worker 0 and read
		// back over ssh.
		w0, cfg := l.workers[0].fqdn, configInside+"/ssh_config"
		extra := mpirunEnv(`mpirun -np 2 --hostfile "$TS_HOSTFILE" sh -c 'echo "rank on $(hostname): $ROLE_VALUE"' &&
echo copied-over-sftp >/run/trainsonnet/scp-src &&
scp -q -F ` + cfg + ` /run/trainsonnet/scp-src ` + w0 + `:/run/trainsonnet/scp-dst &&
ssh -n -F ` + cfg + ` ` + w0 + ` cat /run/trainsonnet/scp-dst`)
		extra["ROLE_VALUE"] = "the launcher's, not to be seen by the ranks"
		lp := l.start(t, l.launcher, "launcher", env, extra)
		code := lp.wait(t)
		out := lp.output()
		require.Equal(t, 0, code, out)
		lines := strings.Split(out, "\n")
		for _, w := range l.workers[:2] {
			assert.Contains(t, lines, "rank on "+w.name+": it's "+w.name, out)
		}
		assert.Contains(t, lines, "copied-over-sftp", "scp to a worker with TS_SSH_ENV, read back over ssh")
		for _, w := range ws {
			assert.Equal(t, 0, w.wait(t), "worker stops by itself: %s", w.output())
		}
		l.assertNothingLeft(t)
	})
	t.Run("mpirun across two workers as a non-root user, tree spawn", func(t *testing.T) {
		// routed_radix=1: mpirun starts the daemon of worker-0 only, which
		// starts worker-1's over ssh with the same rendered client config.
		l.mpirunAcrossWorkers(t, l.userEnv(t), "tse2e", "OMPI_MCA_routed_radix", "1")
	})
	t.Run("a Kubeflow-era ssh Secret", l.kubeflowSecret)
	for _, n := range scaleSizes() {
		t.Run(fmt.Sprintf("%d workers", n), func(t *testing.T) { l.scale(t, n) })
	}
}

// mpirunAcrossWorkers: the launcher waits for both workers, mpirun runs
// `hostname` on them, and the workers end by themselves; all as user. extra
// are more variables of the launcher, as name, value pairs.
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

func (l *lab) mpirunAcrossWorkers(t *testing.T, env map[string]string, user string, extra ...string) {
	ws := l.startWorkers(t, env, 2)
	lenv := mpirunEnv(`echo "launcher user: $(id -un)"; mpirun -np 2 --hostfile "$TS_HOSTFILE" hostname`)
	for i := 0; i+1 < len(extra); i += 2 {
		lenv[extra[i]] = extra[i+1]
	}
	lp := l.start(t, l.launcher, "launcher", env, lenv)
	code := lp.wait(t)
	out := lp.output()
	require.Equal(t, 0, code, out)
	lines := strings.Split(out, "\n")
	for _, w := range l.workers {
		assert.Contains(t, lines, w.name, "mpirun ran on %s", w.name)
	}
	assert.Contains(t, out, "trainsonnet: all 2 workers reachable after ")
	assert.Contains(t, lines, "launcher user: "+user)
	for _, w := range ws {
		assert.Equal(t, 0, w.wait(t), "worker stops by itself: %s", w.output())
		assert.Contains(t, w.output(), "serving ssh on port 2022 as user "+user+"\n")
		assert.Contains(t, w.output(), "trainsonnet: the launcher asked us to stop")
	}
	l.assertNothingLeft(t)
}

// mpirunEnv is the launcher's environment for an exec that runs mpirun,
// with the Open MPI settings the prototypes give the launcher (the rendered
// ssh_config is in the config dir).
func mpirunEnv(exec string) map[string]string {
	return map[string]string{
		"TS_EXEC":                           exec,
		"OMPI_MCA_orte_keep_fqdn_hostnames": "true",
		"OMPI_MCA_plm_rsh_args":             "-F " + configInside + "/ssh_config",
		"OMPI_ALLOW_RUN_AS_ROOT":            "1",
		"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM":    "1",
	}
}

func sshdPath() string {
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	return "/usr/sbin/sshd"
}

func newLab(t *testing.T) *lab {
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	id := hex.EncodeToString(b)
	job := "tsm" + id
	work, err := os.MkdirTemp("", "trainsonnet-e2e-")
	require.NoError(t, err)
	l := &lab{t: t, job: job, work: work, bridge: "tsmbr" + id}
	t.Cleanup(l.destroy)
	require.NoError(t, os.Chmod(work, 0o755))

	mk := func(name, nsSuffix string, i int) host {
		return host{name: name, fqdn: name + "." + job, ns: job + "-" + nsSuffix, veth: job + nsSuffix,
			ip: fmt.Sprintf("%s.%d", subnet, 10+i)}
	}
	l.launcher = mk(job+"-launcher", "l", 0)
	l.workers = []host{mk(job+"-worker-0", "w0", 1), mk(job+"-worker-1", "w1", 2)}

	l.ip("link", "add", l.bridge, "type", "bridge")
	l.ip("link", "set", l.bridge, "up")
	hosts := "127.0.0.1 localhost\n"
	for _, h := range l.all() {
		l.ip("netns", "add", h.ns)
		l.ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
		l.ip("link", "set", h.veth, "master", l.bridge, "up")
		l.ip("-n", h.ns, "addr", "add", h.ip+"/24", "dev", "eth0")
		l.ip("-n", h.ns, "link", "set", "eth0", "up")
		l.ip("-n", h.ns, "link", "set", "lo", "up")
		hosts += fmt.Sprintf("%s %s %s\n", h.ip, h.fqdn, h.name)
	}
	l.write("hosts", hosts, 0o644)
	hostfile := ""
	for _, w := range l.workers {
		hostfile += w.fqdn + " slots=1\n"
	}
	l.write("config/hostfile", hostfile, 0o644)
	// The ConfigMap: what trainsonnet renders for a job, with the hostfile
	// of these hosts; the pods run sh <config dir>/mpi.sh.
	for k, v := range renderedConfig(t) {
		if k != "hostfile" {
			l.write("config/"+k, v, 0o444)
		}
	}
	return l
}

// renderedConfig is the data of the ConfigMap of an openmpi job rendered
// with the defaults (the ssh port, 2022, and the pods' paths).
func renderedConfig(t *testing.T) map[string]string {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	res, err := g.Render(context.Background(), generator.OpenMPI{Name: "e2e", SSH: generator.OpenMPISSH{Secret: "e2e-ssh"}}.Params())
	require.NoError(t, err)
	for _, o := range res.Objects {
		if o.Kind == "ConfigMap" {
			var cm struct{ Data map[string]string }
			require.NoError(t, json.Unmarshal(o.JSON(), &cm))
			for _, k := range []string{"runtime.sh", "mpi.sh", "ssh_config", "sshd_config"} {
				require.Contains(t, cm.Data, k)
			}
			return cm.Data
		}
	}
	t.Fatal("no ConfigMap rendered")
	return nil
}

func (l *lab) all() []host { return append([]host{l.launcher}, l.workers...) }

func (l *lab) ip(args ...string) {
	l.t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(l.t, err, "ip %s: %s", strings.Join(args, " "), out)
}

func (l *lab) write(rel, content string, mode os.FileMode) string {
	l.t.Helper()
	p := filepath.Join(l.work, rel)
	require.NoError(l.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(l.t, os.WriteFile(p, []byte(content), mode))
	require.NoError(l.t, os.Chmod(p, mode))
	return p
}

// destroy removes everything newLab and the cases made, whatever state a
// failure left: processes in our namespaces, the namespaces (which takes
// their veth ends along), the bridge and the work dir.
func (l *lab) destroy() {
	for _, h := range l.all() {
		l.killAllIn(h.ns)
		_ = exec.Command("ip", "netns", "delete", h.ns).Run()
		_ = exec.Command("ip", "link", "delete", h.veth).Run()
	}
	_ = exec.Command("ip", "link", "delete", l.bridge).Run()
	_ = os.RemoveAll(l.work)
}

// pidsIn lists the processes in network namespace ns.
func pidsIn(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (l *lab) killAllIn(ns string) {
	for range 50 {
		pids := pidsIn(ns)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertNothingLeft: after a case, no process (sshd, orted...) is left in
// any host; kills what is, so that the next case starts clean.
func (l *lab) assertNothingLeft(t *testing.T) {
	t.Helper()
	for _, h := range l.all() {
		deadline := time.Now().Add(5 * time.Second)
		for len(pidsIn(h.ns)) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if pids := pidsIn(h.ns); len(pids) > 0 {
			var cmds []string
			for _, pid := range pids {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				cmds = append(cmds, strings.ReplaceAll(string(cmd), "\x00", " "))
			}
			t.Errorf("processes left in %s: %q", h.name, cmds)
			l.killAllIn(h.ns)
		}
	}
}

// keys writes an ed25519 key pair as a kubernetes.io/ssh-auth Secret volume
// would: ssh-privatekey and ssh-publickey, root-owned, mode 0400 (root
// pods) or 0440 with group gid (fsGroup, non-root pods).
func (l *lab) keys(t *testing.T, dir string, gid int) {
	kd := filepath.Join(l.work, dir)
	require.NoError(t, os.MkdirAll(kd, 0o755))
	priv := filepath.Join(kd, "ssh-privatekey")
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "trainsonnet-e2e", "-f", priv).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Rename(priv+".pub", filepath.Join(kd, "ssh-publickey")))
	for _, f := range []string{"ssh-privatekey", "ssh-publickey"} {
		p := filepath.Join(kd, f)
		mode := os.FileMode(0o400)
		if gid != 0 {
			mode = 0o440
		}
		require.NoError(t, os.Chown(p, 0, gid))
		require.NoError(t, os.Chmod(p, mode))
	}
}

// rootEnv is the environment of every process of a root case.
func (l *lab) rootEnv(t *testing.T) map[string]string {
	if _, err := os.Stat(filepath.Join(l.work, "keys-root")); err != nil {
		l.keys(t, "keys-root", 0)
		require.NoError(t, os.MkdirAll(filepath.Join(l.work, "home-root"), 0o700))
		// root's shell is /bin/sh inside the hosts, as in most images:
		// this machine's own root shell and its rc files (a bash that
		// sources ~/.bashrc in ssh sessions) would be what ssh logins cost.
		passwd, err := os.ReadFile("/etc/passwd")
		require.NoError(t, err)
		l.write("passwd-root", regexp.MustCompile(`(?m)^(root:[^:]*:0:0:[^:]*:[^:]*):.*$`).ReplaceAllString(string(passwd), "$1:/bin/sh"), 0o644)
	}
	return l.env("keys-root", "home-root")
}

// userEnv: the same as an unprivileged user that exists only inside the
// hosts (bind-mounted passwd/group), reading the keys through a
// supplementary group as with fsGroup.
func (l *lab) userEnv(t *testing.T) map[string]string {
	uid := freeID(t, "/etc/passwd", 23456)
	gid := freeID(t, "/etc/group", uid)
	keyGID := freeID(t, "/etc/group", gid+1)
	home := filepath.Join(l.work, "home-user")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.Chown(home, uid, gid))
	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	group, err := os.ReadFile("/etc/group")
	require.NoError(t, err)
	l.write("passwd", fmt.Sprintf("%stse2e:x:%d:%d:trainsonnet e2e:%s:/bin/sh\n", passwd, uid, gid, wsInside+"/home-user"), 0o644)
	l.write("group", fmt.Sprintf("%stse2e:x:%d:\ntse2ekeys:x:%d:tse2e\n", group, gid, keyGID), 0o644)
	l.keys(t, "keys-user", keyGID)
	env := l.env("keys-user", "home-user")
	env["E2E_UID"] = strconv.Itoa(uid)
	env["E2E_GID"] = strconv.Itoa(gid)
	env["E2E_KEY_GID"] = strconv.Itoa(keyGID)
	return env
}

// freeID returns the first id >= from that no line of an /etc/passwd-style
// file uses.
func freeID(t *testing.T, file string, from int) int {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	used := map[int]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Split(line, ":"); len(f) > 2 {
			if id, err := strconv.Atoi(f[2]); err == nil {
				used[id] = true
			}
		}
	}
	for used[from] {
		from++
	}
	return from
}

func (l *lab) env(keys, home string) map[string]string {
	return map[string]string{
		"PATH":             sysPath,
		"HOME":             wsInside + "/" + home,
		"E2E_WORK":         l.work,
		"TS_CONFIG_DIR":    configInside,
		"TS_KEY_DIR":       wsInside + "/" + keys,
		"TS_RUN_DIR":       runDir,
		"TS_POLL_INTERVAL": "1",
		"TS_INIT_TIMEOUT":  "30",
		"TS_LAUNCHER":      l.launcher.fqdn,
	}
}

// proc is one host's process tree, started by start.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	code int
	took time.Duration
}

func (l *lab) startWorkers(t *testing.T, env map[string]string, n int) []*proc {
	var ws []*proc
	for _, w := range l.workers[:n] {
		ws = append(ws, l.start(t, w, "worker", env, nil))
	}
	return ws
}

// start runs mpi.sh <role> as host h with env plus extra.
func (l *lab) start(t *testing.T, h host, role string, env, extra map[string]string) *proc {
	t.Helper()
	logf, err := os.CreateTemp(l.work, h.name+"-*.log")
	require.NoError(t, err)
	// A PID namespace too: mpi.sh runs as PID 1, as in a container (where
	// a signal without a handler is ignored, and where everything else
	// dies when PID 1 exits).
	cmd := exec.Command("ip", "netns", "exec", h.ns, "unshare", "--uts", "--mount", "--propagation", "private",
		"--pid", "--fork", "--mount-proc", "sh", "-c", hostSetup, "host-setup", role)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range extra {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "E2E_HOSTNAME="+h.name)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	require.NoError(t, logf.Close())
	p := &proc{name: h.name, cmd: cmd, log: logf.Name(), done: make(chan struct{})}
	started := time.Now()
	go func() {
		_ = cmd.Wait()
		p.took = time.Since(started).Round(time.Millisecond)
		p.code = cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			// As a pod deletion would: SIGTERM lets the script stop its
			// sshd; whatever is left after a few seconds is killed.
			if pid := p.pid1(); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			l.killAllIn(h.ns)
			<-p.done
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("output of %s %s (exit %d after %s):\n%s", h.name, role, p.code, p.took, p.output())
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(procLimit):
		t.Fatalf("%s still running after %s:\n%s", p.name, procLimit, p.output())
		return -1
	}
}

func (p *proc) output() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

// pid1 is the host's pid of the host's PID 1 (mpi.sh once the setup has
// exec'd it): the only child of unshare --fork. 0 when there is none.
func (p *proc) pid1() int {
	pid := p.cmd.Process.Pid
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	child, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return child
}

// signal sends sig to mpi.sh, as the kubelet does to a container's PID 1.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	pid := p.pid1()
	require.Positive(t, pid, "no PID 1 in %s", p.name)
	require.NoError(t, syscall.Kill(pid, sig))
}

func (p *proc) waitForOutput(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(procLimit)
	for !strings.Contains(p.output(), s) {
		if p.exited() || time.Now().After(deadline) {
			require.Contains(t, p.output(), s)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

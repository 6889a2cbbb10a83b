// Package scripts runs lib/assets/mpi.sh (with runtime.sh, and the ssh
// configuration trainsonnet renders into the ConfigMap) for real: real
// sshd, ssh and Open MPI's mpirun, on "hosts" made of Linux namespaces,
// with no Kubernetes. Its tests (TRAINSONNET_E2E=1 go test ./test/scripts/,
// as root) and the runtime benchmark (test/benchruntime, make
// bench-runtime) share the Lab of this file.
//
// Each host is a network namespace on a private bridge (no address on the
// bridge, so nothing is routed to or from the machine) plus, per process
// tree, its own PID namespace (mpi.sh is PID 1, as in a container), UTS
// namespace (so `hostname` differs) and mount namespace in which private
// tmpfs mounts stand in for the pod's filesystem: /run (with the run dir,
// like an emptyDir, and sshd's privilege separation directory), /tmp and
// /dev/shm (Open MPI's session files), and bind mounts of a generated
// /etc/hosts (the headless Service's DNS names) and, for the non-root
// case, /etc/passwd and /etc/group with a test user. The work directory is
// visible inside as /run/ws; its config/ holds the ConfigMap of a job
// rendered by trainsonnet (the scripts, ssh_config, sshd_config) with the
// lab's hostfile. The run dir is the pods' own, /var/run/trainsonnet,
// which the rendered configuration names (/var/run is /run on Debian).
// Nothing outside the lab's own namespaces, bridge, veths and temp dir is
// touched.
//
// Needs root and the Debian packages openmpi-bin openssh-server
// openssh-client pdsh iproute2 (and util-linux, present on every Debian).
package scripts

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
	"sync"
	"syscall"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/typed"
)

const (
	subnet = "10.251.77" // only inside the lab's namespaces
	// WSInside is where the work dir appears inside a host.
	WSInside = "/run/ws"
	// ConfigInside is the ConfigMap's mount in a host.
	ConfigInside = WSInside + "/config"
	// RunDir is the pods' run dir, as rendered.
	RunDir = "/var/run/trainsonnet"
	// ProcLimit: any single process of a test is killed after this long.
	ProcLimit = 90 * time.Second
	sysPath   = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// T is what the lab needs of a test: *testing.T has it, and so has the
// benchmark's own.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
	Logf(format string, args ...any)
	Cleanup(func())
	Failed() bool
}

// hostSetup runs as root inside fresh mount, UTS and PID namespaces of a
// host, then becomes the pod's process: sh <script> <role>, as root or as
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
uid=${E2E_UID:-} gid=${E2E_GID:-} key_gid=${E2E_KEY_GID:-} script=$E2E_SCRIPT
unset E2E_WORK E2E_HOSTNAME E2E_UID E2E_GID E2E_KEY_GID E2E_SCRIPT
if [ -n "$uid" ]; then
	exec setpriv --reuid="$uid" --regid="$gid" --groups="$key_gid" -- sh "$script" "$1"
fi
exec sh "$script" "$1"
`

var requiredTools = []string{"ip", "mpirun", "pdsh", "ssh", "ssh-keygen", "unshare", "setpriv", "mount", "hostname", "getent"}

// Missing lists what the lab needs and this machine lacks (empty: none).
func Missing() []string {
	var missing []string
	for _, tool := range requiredTools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := os.Stat(SSHDPath()); err != nil {
		missing = append(missing, "sshd")
	}
	return missing
}

// Host is one simulated pod.
type Host struct {
	Name string // short host name, e.g. tsm1a2b-worker-0
	FQDN string // hostfile / DNS name, e.g. tsm1a2b-worker-0.tsm1a2b
	ns   string // network namespace
	veth string // host side of its veth pair
	IP   string
}

// Lab is the bridge, the namespaces and the work dir shared by all cases.
type Lab struct {
	t T
	// Verbose: every process's output is logged at cleanup, not only a
	// failed test's.
	Verbose  bool
	Job      string
	Work     string
	bridge   string
	Launcher Host
	Workers  []Host
}

// NewLab makes the launcher and n workers as hosts, and the ConfigMap of a
// job rendered by trainsonnet (or scripts from scriptsDir, when set, in
// place of the rendered runtime.sh and mpi.sh). t's cleanup destroys it.
func NewLab(t T, n int, scriptsDir string) *Lab {
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	id := hex.EncodeToString(b)
	job := "tsm" + id
	work, err := os.MkdirTemp("", "trainsonnet-e2e-")
	require.NoError(t, err)
	l := &Lab{t: t, Job: job, Work: work, bridge: "tsmbr" + id}
	t.Cleanup(l.destroy)
	require.NoError(t, os.Chmod(work, 0o755))

	mk := func(name, nsSuffix string, i int) Host {
		return Host{Name: name, FQDN: name + "." + job, ns: job + "-" + nsSuffix, veth: job + nsSuffix,
			IP: fmt.Sprintf("%s.%d", subnet, 10+i)}
	}
	l.Launcher = mk(job+"-launcher", "l", 0)
	for i := range n {
		l.Workers = append(l.Workers, mk(fmt.Sprintf("%s-worker-%d", job, i), fmt.Sprintf("w%d", i), 1+i))
	}

	l.ip("link", "add", l.bridge, "type", "bridge")
	l.ip("link", "set", l.bridge, "up")
	hosts := "127.0.0.1 localhost\n"
	for _, h := range l.all() {
		l.ip("netns", "add", h.ns)
		l.ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
		l.ip("link", "set", h.veth, "master", l.bridge, "up")
		l.ip("-n", h.ns, "addr", "add", h.IP+"/24", "dev", "eth0")
		l.ip("-n", h.ns, "link", "set", "eth0", "up")
		l.ip("-n", h.ns, "link", "set", "lo", "up")
		hosts += fmt.Sprintf("%s %s %s\n", h.IP, h.FQDN, h.Name)
	}
	l.Write("hosts", hosts, 0o644)
	hostfile := ""
	for _, w := range l.Workers {
		hostfile += w.FQDN + " slots=1\n"
	}
	l.Write("config/hostfile", hostfile, 0o644)
	// The ConfigMap: what trainsonnet renders for a job, with the hostfile
	// of these hosts; the pods run sh <config dir>/mpi.sh.
	for k, v := range RenderedConfig(t) {
		if k != "hostfile" {
			l.Write("config/"+k, v, 0o444)
		}
	}
	if scriptsDir != "" {
		for _, k := range []string{"runtime.sh", "mpi.sh"} {
			data, err := os.ReadFile(filepath.Join(scriptsDir, k))
			require.NoError(t, err)
			l.Write("config/"+k, string(data), 0o444)
		}
	}
	return l
}

// RenderedConfig is the data of the ConfigMap of an openmpi job rendered
// with the defaults (the ssh port, 2022, and the pods' paths).
func RenderedConfig(t T) map[string]string {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	res, err := g.Render(context.Background(), typed.OpenMPI{Common: typed.Common{Name: "e2e"}, SSH: typed.SSH{Secret: "e2e-ssh"}}.Params())
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
	t.Fatalf("no ConfigMap rendered")
	return nil
}

// SSHDPath is where sshd is.
func SSHDPath() string {
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	return "/usr/sbin/sshd"
}

func (l *Lab) all() []Host { return append([]Host{l.Launcher}, l.Workers...) }

func (l *Lab) ip(args ...string) {
	l.t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(l.t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// Write writes a file of the work dir (rel to it); it returns its path.
func (l *Lab) Write(rel, content string, mode os.FileMode) string {
	l.t.Helper()
	p := filepath.Join(l.Work, rel)
	require.NoError(l.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(l.t, os.WriteFile(p, []byte(content), mode))
	require.NoError(l.t, os.Chmod(p, mode))
	return p
}

// destroy removes everything NewLab and the cases made, whatever state a
// failure left: processes in the lab's namespaces, the namespaces (which
// takes their veth ends along), the bridge and the work dir.
func (l *Lab) destroy() {
	for _, h := range l.all() {
		l.KillAllIn(h)
		_ = exec.Command("ip", "netns", "delete", h.ns).Run()
		_ = exec.Command("ip", "link", "delete", h.veth).Run()
	}
	_ = exec.Command("ip", "link", "delete", l.bridge).Run()
	_ = os.RemoveAll(l.Work)
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

// KillAllIn kills every process of host h.
func (l *Lab) KillAllIn(h Host) {
	for range 50 {
		pids := pidsIn(h.ns)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// AssertNothingLeft checks that, after a case, no process (sshd, orted...)
// is left in any host; it kills what is, so that the next case starts clean.
func (l *Lab) AssertNothingLeft(t T) {
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
			t.Errorf("processes left in %s: %q", h.Name, cmds)
			l.KillAllIn(h)
		}
	}
}

// keys writes an ed25519 key pair as a kubernetes.io/ssh-auth Secret volume
// would: ssh-privatekey and ssh-publickey, root-owned, mode 0400 (root
// pods) or 0440 with group gid (fsGroup, non-root pods).
func (l *Lab) keys(t T, dir string, gid int) {
	kd := filepath.Join(l.Work, dir)
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

// RootEnv is the environment of every process of a root case.
func (l *Lab) RootEnv(t T) map[string]string {
	if _, err := os.Stat(filepath.Join(l.Work, "keys-root")); err != nil {
		l.keys(t, "keys-root", 0)
		require.NoError(t, os.MkdirAll(filepath.Join(l.Work, "home-root"), 0o700))
		// root's shell is /bin/sh inside the hosts, as in most images:
		// this machine's own root shell and its rc files (a bash that
		// sources ~/.bashrc in ssh sessions) would be what ssh logins cost.
		passwd, err := os.ReadFile("/etc/passwd")
		require.NoError(t, err)
		l.Write("passwd-root", regexp.MustCompile(`(?m)^(root:[^:]*:0:0:[^:]*:[^:]*):.*$`).ReplaceAllString(string(passwd), "$1:/bin/sh"), 0o644)
	}
	return l.env("keys-root", "home-root")
}

// UserEnv is RootEnv's counterpart for an unprivileged user that exists
// only inside the hosts (bind-mounted passwd/group), reading the keys
// through a supplementary group as with fsGroup. Any case may ask for it,
// as often as it likes.
func (l *Lab) UserEnv(t T) map[string]string {
	uid := freeID(t, "/etc/passwd", 23456)
	gid := freeID(t, "/etc/group", uid)
	keyGID := freeID(t, "/etc/group", gid+1)
	home := filepath.Join(l.Work, "home-user")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.Chown(home, uid, gid))
	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	group, err := os.ReadFile("/etc/group")
	require.NoError(t, err)
	l.Write("passwd", fmt.Sprintf("%stse2e:x:%d:%d:trainsonnet e2e:%s:/bin/sh\n", passwd, uid, gid, WSInside+"/home-user"), 0o644)
	l.Write("group", fmt.Sprintf("%stse2e:x:%d:\ntse2ekeys:x:%d:tse2e\n", group, gid, keyGID), 0o644)
	if _, err := os.Stat(filepath.Join(l.Work, "keys-user")); err != nil { // once a lab: the cases share the key
		l.keys(t, "keys-user", keyGID)
	}
	env := l.env("keys-user", "home-user")
	env["E2E_UID"] = strconv.Itoa(uid)
	env["E2E_GID"] = strconv.Itoa(gid)
	env["E2E_KEY_GID"] = strconv.Itoa(keyGID)
	return env
}

// freeID returns the first id >= from that no line of an /etc/passwd-style
// file uses.
func freeID(t T, file string, from int) int {
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

func (l *Lab) env(keys, home string) map[string]string {
	return map[string]string{
		"PATH":             sysPath,
		"HOME":             WSInside + "/" + home,
		"E2E_WORK":         l.Work,
		"TS_CONFIG_DIR":    ConfigInside,
		"TS_KEY_DIR":       WSInside + "/" + keys,
		"TS_RUN_DIR":       RunDir,
		"TS_POLL_INTERVAL": "1",
		"TS_INIT_TIMEOUT":  "30",
		"TS_LAUNCHER":      l.Launcher.FQDN,
	}
}

// Proc is one host's process tree, started by Start.
type Proc struct {
	Name    string
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	Code    int
	Started time.Time     // when it was started
	Ended   time.Time     // when it had exited (once Done)
	Took    time.Duration // from Started to Ended
}

// StartWorkers starts mpi.sh worker in the first n worker hosts.
func (l *Lab) StartWorkers(t T, env map[string]string, n int) []*Proc {
	var ws []*Proc
	for _, w := range l.Workers[:n] {
		ws = append(ws, l.Start(t, w, "worker", env, nil))
	}
	return ws
}

// Start runs mpi.sh <role> as host h with env plus extra.
func (l *Lab) Start(t T, h Host, role string, env, extra map[string]string) *Proc {
	t.Helper()
	return l.StartScript(t, h, ConfigInside+"/mpi.sh", role, env, extra)
}

// StartScript runs sh <script> <role> (a path inside the host) as host h
// with env plus extra.
func (l *Lab) StartScript(t T, h Host, script, role string, env, extra map[string]string) *Proc {
	t.Helper()
	logf, err := os.CreateTemp(l.Work, h.Name+"-*.log")
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
	cmd.Env = append(cmd.Env, "E2E_HOSTNAME="+h.Name, "E2E_SCRIPT="+script)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Proc{Name: h.Name, cmd: cmd, log: logf.Name(), done: make(chan struct{})}
	p.Started = time.Now()
	require.NoError(t, cmd.Start())
	require.NoError(t, logf.Close())
	go func() {
		_ = cmd.Wait()
		p.Ended = time.Now()
		p.Took = p.Ended.Sub(p.Started).Round(time.Millisecond)
		p.Code = cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			// As a pod deletion would: SIGTERM lets the script stop its
			// sshd; whatever is left after a few seconds is killed.
			if pid := p.Pid1(); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			l.KillAllIn(h)
			<-p.done
		}
		if t.Failed() || l.Verbose {
			t.Logf("output of %s %s (exit %d after %s):\n%s", h.Name, role, p.Code, p.Took, p.Output())
		}
	})
	return p
}

// Done is closed once the process tree's first process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited says whether it has.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait returns the exit code; the test fails if it still runs after
// ProcLimit.
func (p *Proc) Wait(t T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.Code
	case <-time.After(ProcLimit):
		t.Fatalf("%s still running after %s:\n%s", p.Name, ProcLimit, p.Output())
		return -1
	}
}

// Output is what it printed so far.
func (p *Proc) Output() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

// Pid1 is the machine's pid of the host's PID 1 (mpi.sh once the setup
// has exec'd it): the only child of unshare --fork. 0 when there is none.
func (p *Proc) Pid1() int {
	pid := p.cmd.Process.Pid
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	child, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return child
}

// SSHD is the machine's pid of the sshd that p (mpi.sh worker) serves
// with: the child of its PID 1 named sshd (its sessions are that one's
// children). The test fails when there is none.
func (p *Proc) SSHD(t T) int {
	t.Helper()
	pid1 := p.Pid1()
	require.Positive(t, pid1, "no PID 1 in %s", p.Name)
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid1, pid1))
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "sshd" {
			return pid
		}
	}
	t.Fatalf("no sshd under %s's PID 1 (%d): children %q", p.Name, pid1, data)
	return 0
}

// CutOff takes host h off the lab's network, as a pod whose network is
// cut: its link to the bridge goes down, and every packet to or from it is
// lost, not refused. The function it returns brings the link back.
func (l *Lab) CutOff(t T, h Host) func() {
	t.Helper()
	l.ip("link", "set", h.veth, "down")
	t.Logf("cut off %s", h.Name)
	var once sync.Once
	return func() {
		once.Do(func() {
			l.ip("link", "set", h.veth, "up")
			t.Logf("%s back on the network", h.Name)
		})
	}
}

// Signal sends sig to mpi.sh, as the kubelet does to a container's PID 1.
func (p *Proc) Signal(t T, sig syscall.Signal) {
	t.Helper()
	pid := p.Pid1()
	require.Positive(t, pid, "no PID 1 in %s", p.Name)
	require.NoError(t, syscall.Kill(pid, sig))
}

// WaitForOutput returns once s is in the output; the test fails when the
// process exits or ProcLimit passes first.
func (p *Proc) WaitForOutput(t T, s string) {
	t.Helper()
	deadline := time.Now().Add(ProcLimit)
	for !strings.Contains(p.Output(), s) {
		if p.Exited() || time.Now().After(deadline) {
			require.Contains(t, p.Output(), s)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var pssLine = regexp.MustCompile(`(?m)^Pss:\s+(\d+) kB`)

// Peak is what Sample saw of a process tree's PID namespace: its largest
// number of processes, and their largest total resident memory (Pss: with
// shared pages split among their users), in bytes.
type Peak struct {
	Procs int
	Pss   int64
	// While its output held the marker given to Sample.
	ProcsAfterMarker int
}

// Sample reads /proc every 100 ms until p has exited; the function it
// returns gives the peaks of p's PID namespace.
func Sample(p *Proc, marker string) func() Peak {
	var mu sync.Mutex
	var peak Peak
	done := make(chan struct{})
	go func() {
		defer close(done)
		ns := ""
		for !p.Exited() {
			time.Sleep(100 * time.Millisecond)
			if ns == "" {
				if pid := p.Pid1(); pid > 0 {
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
				// Pss: the sum of Rss would count each ssh's libraries
				// once per process.
				smaps, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "smaps_rollup"))
				if m := pssLine.FindSubmatch(smaps); m != nil {
					kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
					rss += kb << 10
				}
			}
			after := marker != "" && strings.Contains(p.Output(), marker)
			mu.Lock()
			peak.Procs, peak.Pss = max(peak.Procs, n), max(peak.Pss, rss)
			if after {
				peak.ProcsAfterMarker = max(peak.ProcsAfterMarker, n)
			}
			mu.Unlock()
		}
	}()
	return func() Peak {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// LoopbackHostfile writes hostfile-<n> into the work dir: n addresses of
// 127.0.0.0/8 (not 127.0.0.1), which the one sshd of a host serves all
// at once; it returns the file's path inside the hosts.
func (l *Lab) LoopbackHostfile(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "127.%d.%d.%d slots=1\n", 1+i/62500, i/250%250, 1+i%250)
	}
	name := fmt.Sprintf("hostfile-%d", n)
	l.Write(name, b.String(), 0o644)
	return WSInside + "/" + name
}

// Tail is the last lines of a long log.
func Tail(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 60 {
		lines = append([]string{"[...]"}, lines[len(lines)-60:]...)
	}
	return strings.Join(lines, "\n")
}

// MPIRunEnv is the launcher's environment for an exec that runs mpirun,
// with the Open MPI settings the prototypes give the launcher (the rendered
// ssh_config is in the config dir).
func MPIRunEnv(exec string) map[string]string {
	return map[string]string{
		"TS_EXEC":                           exec,
		"OMPI_MCA_orte_keep_fqdn_hostnames": "true",
		"OMPI_MCA_plm_rsh_args":             "-F " + ConfigInside + "/ssh_config",
		"OMPI_ALLOW_RUN_AS_ROOT":            "1",
		"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM":    "1",
	}
}

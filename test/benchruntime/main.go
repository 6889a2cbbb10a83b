// Command benchruntime times the pods' runtime (lib/assets/mpi.sh with
// runtime.sh, as rendered into a job's ConfigMap) at 100, 1,000 and 5,000
// simulated workers, and prints one line per size:
//
//	runtime N=<n>: start <s> s, stop <s> s, peak <p> processes, <m> MiB
//
// It runs in the lab of test/scripts (network, PID and mount namespaces;
// real sshd and ssh): one sshd, a worker's, serves all the addresses of a
// hostfile of N loopback addresses in the launcher's network namespace, so
// the launcher sweeps, logs in and opens its stop port as with N workers.
// That worker and -watchers more, each in a host of its own, read the
// stop port as every worker does (every N/250 seconds, from a random
// start), with every worker listening before the launcher starts.
//
//	start: the launcher's process started -> TS_EXEC runs
//	stop:  TS_EXEC ended -> the last of those workers exited
//	peak:  processes and resident memory (Pss) of the launcher's PID
//	       namespace, read every 100 ms
//
// With -scripts DIR the runtime.sh and mpi.sh of DIR run instead (an
// older runtime, to compare): the worker is then a bare sshd that never
// stops, since an older launcher tells each worker over ssh, and stop is
// TS_EXEC's end -> the launcher has told them all (the workers stopped
// within their poll interval, 2 s, of being told).
//
// Needs root and what test/scripts needs (openssh-server, openmpi-bin,
// iproute2). Run it on an otherwise idle machine: `make bench-runtime`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trainsonnet/trainsonnet/test/scripts"
)

func main() {
	sizes := flag.String("sizes", "100,1000,5000", "numbers of workers, comma-separated")
	watchers := flag.Int("watchers", 8, "workers in hosts of their own that read the stop port too")
	scriptsDir := flag.String("scripts", "", "run the runtime.sh and mpi.sh of this directory instead of the rendered ones")
	tool := flag.String("tool", "", "TS_TCP_TOOL of the launcher (python3, bash, nc; default: its own choice)")
	verbose := flag.Bool("v", false, "print the processes' output")
	flag.Parse()
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail("-sizes: %q is not a number of workers", f)
		}
		ns = append(ns, n)
	}
	if os.Geteuid() != 0 {
		fail("needs root: it creates network namespaces, a bridge and mounts")
	}
	if missing := scripts.Missing(); len(missing) > 0 {
		fail("missing %s (apt-get install openmpi-bin openssh-server openssh-client pdsh iproute2)", strings.Join(missing, ", "))
	}
	old := *scriptsDir != ""
	if old {
		*watchers = 0
	}
	b := &bench{verbose: *verbose}
	err := b.do(func() {
		lab := scripts.NewLab(b, *watchers, *scriptsDir)
		lab.Verbose = *verbose
		if old {
			fmt.Printf("# runtime.sh and mpi.sh of %s\n", *scriptsDir)
		}
		for _, n := range ns {
			var r result
			if err := b.do(func() { r = run(b, lab, n, old, *tool) }); err != nil {
				fail("N=%d: %v", n, err)
			}
			fmt.Printf("runtime N=%d: start %.1f s, stop %.1f s, peak %d processes, %.1f MiB\n",
				n, r.start.Seconds(), r.stop.Seconds(), r.peak.Procs, float64(r.peak.Pss)/(1<<20))
		}
	})
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchruntime: "+format+"\n", args...)
	os.Exit(1)
}

type result struct {
	start, stop time.Duration
	peak        scripts.Peak
}

// sizeLimit bounds one size: the wait alone is bounded by the default
// TS_INIT_TIMEOUT, 300 s; an older launcher's ssh calls take longer.
const sizeLimit = 30 * time.Minute

// sshdOnly is the worker of an older runtime: sshd with the rendered
// configuration, which no call stops (so that every call of the launcher
// costs what it would against a worker of its own).
const sshdOnly = `set -eu
d=` + scripts.RunDir + `/ssh
mkdir -p "$d"
chmod 700 "$d"
cp "$TS_KEY_DIR/ssh-publickey" "$d/authorized_keys"
chmod 600 "$d/authorized_keys"
ssh-keygen -q -t ed25519 -N '' -f "$d/ssh_host_ed25519_key"
mkdir -p /run/sshd
echo "serving ssh on port 2022"
exec "$(command -v sshd || echo /usr/sbin/sshd)" -D -e -f "$TS_CONFIG_DIR/sshd_config"
`

func run(b *bench, lab *scripts.Lab, n int, old bool, tool string) result {
	hostfile := lab.LoopbackHostfile(n)
	env := lab.RootEnv(b)
	// The defaults, as rendered; every pod reads the same hostfile.
	env["TS_INIT_TIMEOUT"] = "300"
	delete(env, "TS_POLL_INTERVAL")
	env["TS_HOSTFILE"] = hostfile
	var workers []*scripts.Proc
	if old {
		lab.Write("sshd-only.sh", sshdOnly, 0o755)
		workers = append(workers, lab.StartScript(b, lab.Launcher, scripts.WSInside+"/sshd-only.sh", "worker", env, nil))
	} else {
		workers = append(workers, lab.Start(b, lab.Launcher, "worker", env, nil))
		for _, h := range lab.Workers {
			workers = append(workers, lab.Start(b, h, "worker", env, nil))
		}
	}
	for _, w := range workers {
		w.WaitForOutput(b, "serving ssh on port 2022")
	}
	mark := fmt.Sprintf("exec-%d", n)
	lenv := map[string]string{
		"TS_EXEC": fmt.Sprintf("date +%%s.%%N >%[1]s/%[2]s.start; date +%%s.%%N >%[1]s/%[2]s.end", scripts.WSInside, mark),
	}
	if tool != "" {
		lenv["TS_TCP_TOOL"] = tool
	}
	lp := lab.Start(b, lab.Launcher, "launcher", env, lenv)
	peak := scripts.Sample(lp, "")
	select {
	case <-lp.Done():
	case <-time.After(sizeLimit):
		b.Fatalf("launcher still running after %s:\n%s", sizeLimit, scripts.Tail(lp.Output()))
	}
	r := result{peak: peak()}
	if lp.Code != 0 || !strings.Contains(lp.Output(), fmt.Sprintf("all %d workers reachable after ", n)) {
		b.Fatalf("the launcher exited %d:\n%s", lp.Code, scripts.Tail(lp.Output()))
	}
	started, ended := stamp(b, lab, mark+".start"), stamp(b, lab, mark+".end")
	r.start = started.Sub(lp.Started)
	if old {
		r.stop = lp.Ended.Sub(ended)
		workers[0].Signal(b, syscall.SIGTERM)
	}
	last := lp.Ended
	for _, w := range workers {
		select {
		case <-w.Done():
		case <-time.After(scripts.ProcLimit):
			b.Fatalf("%s still running %s after the launcher:\n%s", w.Name, scripts.ProcLimit, scripts.Tail(w.Output()))
		}
		if !old && w.Code != 0 {
			b.Fatalf("%s exited %d:\n%s", w.Name, w.Code, scripts.Tail(w.Output()))
		}
		if w.Ended.After(last) {
			last = w.Ended
		}
		if !old {
			r.stop = max(r.stop, w.Ended.Sub(ended))
		}
	}
	lab.AssertNothingLeft(b)
	if b.Failed() {
		b.FailNow()
	}
	return r
}

// stamp reads a `date +%s.%N` that TS_EXEC wrote into the work dir.
func stamp(b *bench, lab *scripts.Lab, name string) time.Time {
	data, err := os.ReadFile(filepath.Join(lab.Work, name))
	if err != nil {
		b.Fatalf("TS_EXEC left no %s: %v", name, err)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return time.Unix(0, int64(secs*1e9))
}

// bench is the lab's T: failures end the current do with an error, and
// cleanups run at its end.
type bench struct {
	verbose  bool
	failed   bool
	cleanups []func()
}

var errFailed = errors.New("failed")

// do runs fn; what fn registered with Cleanup runs once it returns or
// fails. It returns an error when fn failed.
func (b *bench) do(fn func()) (err error) {
	mark := len(b.cleanups)
	b.failed = false
	defer func() {
		for i := len(b.cleanups) - 1; i >= mark; i-- {
			b.cleanups[i]()
		}
		b.cleanups = b.cleanups[:mark]
		if r := recover(); r != nil {
			if e, ok := r.(error); !ok || !errors.Is(e, errFailed) {
				panic(r)
			}
			err = errFailed
		}
	}()
	fn()
	return nil
}

func (b *bench) Helper() {}

func (b *bench) Errorf(format string, args ...any) {
	b.failed = true
	fmt.Fprintf(os.Stderr, "benchruntime: "+format+"\n", args...)
}

func (b *bench) Fatalf(format string, args ...any) {
	b.Errorf(format, args...)
	b.FailNow()
}

func (b *bench) FailNow() { panic(errFailed) }

func (b *bench) Logf(format string, args ...any) {
	if b.verbose || b.failed {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

func (b *bench) Cleanup(fn func()) { b.cleanups = append(b.cleanups, fn) }

func (b *bench) Failed() bool { return b.failed }

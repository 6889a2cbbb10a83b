// Command benchcli measures `trainsonnet gen` as users run it: a whole
// process, cold, beside a Go hello-world built with the same toolchain and
// `cat` of the same bytes, for every built-in prototype at 4 workers and
// at its largest job (10,000 workers, or the prototype's maximum). It
// prints the medians of -n runs, the ratios to hello-world, and peak RSS,
// next to the targets of issue 15 (≤ 3× hello-world at 4 workers, ≤ 4× at
// 10,000, ≤ 20 MiB). Run it on an idle machine: `make bench-cli`.
//
// Wall times are of the process alone (fork/exec to exit, output to
// /dev/null); peak RSS is the kernel's ru_maxrss of the child. Each run is
// started by a fresh copy of this program (-one), a small process: Go
// starts children with vfork, and a child's ru_maxrss counts the parent's
// memory until exec, so a large parent would inflate every figure. For the
// same reason this program imports nothing of trainsonnet: it asks the
// binary (list, schema) which prototypes there are and how large they go.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

const (
	smallJob = 4
	largeJob = 10000
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-one" {
		one(os.Args[2:])
		return
	}
	runs := flag.Int("n", 21, "runs per measurement (the median is printed)")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "benchcli:", err)
		os.Exit(1)
	}
}

// sample is the median wall time and the largest peak RSS of runs.
type sample struct {
	wall  time.Duration
	rssKB int64
}

func run(runs int) error {
	dir, err := os.MkdirTemp("", "benchcli-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, "trainsonnet")
	hello := filepath.Join(dir, "hello")
	if err := build(root, dir, bin, hello); err != nil {
		return err
	}
	base, err := measure(runs, hello)
	if err != nil {
		return err
	}
	fmt.Printf("Go hello-world: %s, %s (median of %d runs)\n", ms(base.wall), mib(base.rssKB), runs)
	// The floor of every gen: the binary started and its packages
	// initialised, no Jsonnet parsed or evaluated.
	start, err := measure(runs, bin, "version")
	if err != nil {
		return err
	}
	fmt.Printf("trainsonnet version (start-up and package init, no Jsonnet): %s, %.1f× hello, %s\n\n",
		ms(start.wall), float64(start.wall)/float64(base.wall), mib(start.rssKB))

	protos, err := prototypes(bin)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "prototype\tworkers\tgen\t× hello\ttarget\tpeak RSS\tcat of its output\t")
	for _, pr := range protos {
		name := pr.name
		for _, size := range pr.sizes() {
			args := pr.genArgs(size)
			out := filepath.Join(dir, name+".yaml")
			if err := renderTo(bin, args, out); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			s, err := measure(runs, bin, args...)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			c, err := measure(runs, "cat", out)
			if err != nil {
				return err
			}
			target := 3.0
			if size.n > smallJob {
				target = 4
			}
			ratio := float64(s.wall) / float64(base.wall)
			mark := "ok"
			if ratio > target || s.rssKB > 20*1024 {
				mark = "over"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f×\t≤ %.0f× %s\t%s\t%s\t\n",
				name, size.label, ms(s.wall), ratio, target, mark, mib(s.rssKB), ms(c.wall))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return measureBatch(runs, dir, bin, protos)
}

// batchJobs is the size of the batch measured: jobs of every prototype in
// turn, 4 workers where they have workers.
const batchJobs = 100

// measureBatch times `trainsonnet batch` over a directory of batchJobs
// params files and over one of them, and prints the cost of each job
// after the first (target of issue 15: at most 3 ms).
func measureBatch(runs int, dir, bin string, protos []proto) error {
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		return err
	}
	for i := range batchJobs {
		p := protos[i%len(protos)]
		text := fmt.Sprintf("prototype: %s\nname: job-%d\n", p.name, i)
		if p.count != "" {
			text += strings.ReplaceAll(p.count, ".", ":\n  ") + ": " + strconv.Itoa(smallJob) + "\n"
		}
		if p.takesSSH {
			text += "ssh:\n  secret: bench-ssh\n"
		}
		if err := os.WriteFile(filepath.Join(jobs, fmt.Sprintf("job-%03d.yaml", i)), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := renderTo(bin, []string{"batch", jobs}, filepath.Join(dir, "batch.yaml")); err != nil {
		return err
	}
	one, err := measure(runs, bin, "batch", filepath.Join(jobs, "job-000.yaml"))
	if err != nil {
		return err
	}
	all, err := measure(runs, bin, "batch", jobs)
	if err != nil {
		return err
	}
	per := (all.wall - one.wall) / (batchJobs - 1)
	mark := "ok"
	if per > 3*time.Millisecond {
		mark = "over"
	}
	fmt.Printf("\nbatch of %d jobs (every prototype in turn) in one process: %s, %s peak; of 1 job: %s\n", batchJobs, ms(all.wall), mib(all.rssKB), ms(one.wall))
	fmt.Printf("each job after the first: %s (target ≤ 3 ms: %s)\n", ms(per), mark)
	return nil
}

// repoRoot is the directory of the product's go.mod, from this package's.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cmd", "trainsonnet")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("run from inside the repository (no cmd/trainsonnet above %s)", wd)
}

// build compiles trainsonnet and a hello-world with the same toolchain.
func build(root, dir, bin, hello string) error {
	// As the README installs it: static (CGO_ENABLED=0), with no dynamic
	// loader and libc to start, as the hello-world is.
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/trainsonnet")
	cmd.Dir, cmd.Stderr = root, os.Stderr
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building trainsonnet: %w", err)
	}
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"), 0o644); err != nil {
		return err
	}
	cmd = exec.Command("go", "build", "-o", hello, src)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=off")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building hello-world: %w", err)
	}
	return nil
}

// proto is what the binary says of one prototype: its name, the parameter
// that sets its number of workers (if any) and that parameter's maximum,
// and whether it takes an existing ssh Secret.
type proto struct {
	name     string
	count    string
	max      int
	takesSSH bool
}

// prototypes asks the binary for its prototypes and their schemas.
func prototypes(bin string) ([]proto, error) {
	out, err := exec.Command(bin, "list", "-o", "json").Output()
	if err != nil {
		return nil, fmt.Errorf("%s list -o json: %w", bin, err)
	}
	var list []struct{ Name string }
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	var protos []proto
	for _, l := range list {
		out, err := exec.Command(bin, "schema", l.Name).Output()
		if err != nil {
			return nil, fmt.Errorf("%s schema %s: %w", bin, l.Name, err)
		}
		var schema node
		if err := json.Unmarshal(out, &schema); err != nil {
			return nil, err
		}
		p := proto{name: l.Name, takesSSH: schema.at("ssh.secret") != nil}
		for _, path := range []string{"workers", "worker.number"} {
			if n := schema.at(path); n != nil {
				p.count, p.max = path, largeJob
				if n.Maximum != nil && *n.Maximum < largeJob {
					p.max = *n.Maximum
				}
				break
			}
		}
		protos = append(protos, p)
	}
	return protos, nil
}

// node is a JSON Schema, as far as this program reads it.
type node struct {
	Properties map[string]*node `json:"properties"`
	Maximum    *int             `json:"maximum"`
}

// at is the schema of the parameter at a dotted path, or nil.
func (n *node) at(path string) *node {
	for _, k := range strings.Split(path, ".") {
		if n == nil {
			return nil
		}
		n = n.Properties[k]
	}
	return n
}

type size struct {
	n     int
	label string
}

// sizes: 4 workers and the largest job, or one size for a prototype
// without workers.
func (p proto) sizes() []size {
	if p.count == "" {
		return []size{{1, "-"}}
	}
	return []size{{smallJob, strconv.Itoa(smallJob)}, {p.max, strconv.Itoa(p.max)}}
}

// genArgs is the command line of one measurement: an existing ssh Secret
// where the prototype takes one, as issue 15 measured (no key generated).
func (p proto) genArgs(s size) []string {
	args := []string{"gen", p.name, "--name", "bench"}
	if p.count != "" {
		args = append(args, "--set", p.count+"="+strconv.Itoa(s.n))
	}
	if p.takesSSH {
		args = append(args, "--set", "ssh.secret=bench-ssh")
	}
	return args
}

func renderTo(bin string, args []string, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, nil
	if err := cmd.Run(); err != nil {
		_ = f.Close()
		return fmt.Errorf("%s %v: %w", bin, args, err)
	}
	return f.Close()
}

// measure runs the command runs times, each started by a fresh -one.
func measure(runs int, name string, args ...string) (sample, error) {
	self, err := os.Executable()
	if err != nil {
		return sample{}, err
	}
	walls := make([]time.Duration, 0, runs)
	var peak int64
	for range runs {
		out, err := exec.Command(self, append([]string{"-one", name}, args...)...).Output()
		if err != nil {
			return sample{}, fmt.Errorf("%s %v: %w", name, args, err)
		}
		var ns, kb int64
		if _, err := fmt.Sscan(string(out), &ns, &kb); err != nil {
			return sample{}, fmt.Errorf("%s %v: %q: %w", name, args, out, err)
		}
		walls = append(walls, time.Duration(ns))
		peak = max(peak, kb)
	}
	slices.Sort(walls)
	return sample{wall: walls[len(walls)/2], rssKB: peak}, nil
}

// one runs a command once, output to /dev/null, and prints its wall time
// in nanoseconds and its peak RSS in KiB.
func one(argv []string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcli:", argv, err)
		os.Exit(1)
	}
	var kb int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		kb = ru.Maxrss
	}
	fmt.Println(wall.Nanoseconds(), kb)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func mib(kb int64) string       { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

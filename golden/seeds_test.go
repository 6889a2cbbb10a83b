package golden

// The seed scenario tests: what each replaced system's own values and
// documented commands ran, written down from that system's text (its chart
// templates, values files and README) in golden/seeds/<seed>.yaml, not from
// our output, and compared pod by pod with what trainsonnet renders from
// the same input. A deliberate difference (an upstream bug fixed, an
// obsolete API replaced) is declared in the table with the warning the
// render must print about it; any other difference fails.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// seedFile is the shape of golden/seeds/<seed>.yaml.
type seedFile struct {
	Seed      string         `json:"seed"` // which seed, and the sources read
	Scenarios []seedScenario `json:"scenarios"`
}

type seedScenario struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`  // the seed's command, in its words
	Args string `json:"args"` // what a migrating user runs (from golden/)
	// Pods: what each of the chart's pods ran.
	Pods []seedPod `json:"pods"`
	// Services: the chart's Services.
	Services []seedService `json:"services"`
	// Differs: what trainsonnet does otherwise on purpose, each with the
	// warning the render prints about it.
	Differs []seedDiff `json:"differs"`
}

type seedPod struct {
	Chart string  `json:"chart"` // the chart's pod, in its words
	Ours  seedRef `json:"ours"`  // the workload of ours that stands for it
	// What the chart's pod had; each is compared when given.
	Image        *string           `json:"image"`
	PullPolicy   *string           `json:"pullPolicy"`
	GPUs         *int64            `json:"gpus"`
	Runs         []string          `json:"runs"` // command lines, in order of start
	Env          map[string]string `json:"env"`
	Mounts       []string          `json:"mounts"`
	Ports        []int32           `json:"ports"`
	HostPorts    []int32           `json:"hostPorts"`
	Tolerations  []string          `json:"tolerations"` // key=value:effect
	NodeSelector map[string]string `json:"nodeSelector"`
	Privileged   *bool             `json:"privileged"`
	HostNetwork  *bool             `json:"hostNetwork"`
	SparkConf    map[string]string `json:"sparkConf"` // spark-defaults.conf
	Files        []string          `json:"files"`     // files of a ConfigMap the pod had
	FileText     map[string]string `json:"fileText"`  // ... with this text
}

type seedRef struct {
	Kind  string `json:"kind"` // Job or Deployment
	Name  string `json:"name"`
	Index int    `json:"index"` // the pod of an Indexed Job
}

type seedService struct {
	Chart string   `json:"chart"`
	Ours  string   `json:"ours"`
	Type  string   `json:"type"`
	Ports []string `json:"ports"` // port:targetPort
}

type seedDiff struct {
	What    string `json:"what"`
	Warning string `json:"warning"` // a part of a warning of the render
	// Same: why this is no difference at all (the same job), for what
	// needs no warning: a listing for debugging dropped, /bin/bash for
	// bash.
	Same string `json:"same"`
	// Rename: the chart's text (in env values and command lines) and ours.
	Rename map[string]string `json:"rename"`
	// Drop: what of the table is not compared, by field (env, mounts,
	// ports, hostPorts, tolerations, nodeSelector: their items; runs: the
	// first word of a command line; privileged, pullPolicy, gpus, image,
	// hostNetwork, serviceType: any item).
	Drop map[string][]string `json:"drop"`
	// Flags: the chart's flag and ours, in command lines ("--bokeh-port":
	// "--dashboard-address"); a value of "" drops the chart's flag.
	Flags map[string]string `json:"flags"`
}

func TestSeedScenarios(t *testing.T) {
	files, err := filepath.Glob("seeds/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var sf seedFile
		require.NoError(t, yaml.UnmarshalStrict(raw, &sf), file)
		require.NotEmpty(t, sf.Seed, file)
		for _, sc := range sf.Scenarios {
			t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml")+"/"+sc.Name, func(t *testing.T) {
				sc.check(t)
			})
		}
	}
}

func (sc seedScenario) check(t *testing.T) {
	args, err := splitWords(sc.Args)
	require.NoError(t, err)
	code, stdout, stderr := run(t, args)
	require.Equal(t, 0, code, string(stderr))
	warnings := string(stderr)
	r := rendered{objects: decodeStream(t, stdout)}

	// Every deliberate difference is said at render time.
	for _, d := range sc.Differs {
		if d.Same != "" {
			assert.Empty(t, d.Warning, "difference %q: same, or warned about?", d.What)
			continue
		}
		require.NotEmpty(t, d.Warning, "difference %q: which warning says it?", d.What)
		assert.Contains(t, warnings, d.Warning, "difference %q is not warned about", d.What)
	}
	dropped := func(field, item string) bool {
		for _, d := range sc.Differs {
			if slices.Contains(d.Drop[field], item) || slices.Contains(d.Drop[field], "*") {
				return true
			}
		}
		return false
	}
	rename := func(s string) string {
		for _, d := range sc.Differs {
			keys := slices.Collect(maps.Keys(d.Rename))
			sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
			for _, k := range keys {
				s = strings.ReplaceAll(s, k, d.Rename[k])
			}
		}
		return s
	}
	flags := map[string]string{}
	for _, d := range sc.Differs {
		maps.Copy(flags, d.Flags)
	}

	for _, want := range sc.Pods {
		t.Run(want.Chart, func(t *testing.T) {
			pod := r.pod(t, want.Ours)
			main := pod.spec.Containers[0]
			if want.Image != nil && !dropped("image", "*") {
				assert.Equal(t, rename(*want.Image), main.Image, "image")
			}
			if want.PullPolicy != nil && !dropped("pullPolicy", "*") {
				assert.Equal(t, *want.PullPolicy, string(main.ImagePullPolicy), "imagePullPolicy")
			}
			if want.GPUs != nil && !dropped("gpus", "*") {
				assert.Equal(t, *want.GPUs, gpus(main), "GPUs")
			}
			if want.Privileged != nil && !dropped("privileged", "*") {
				got := main.SecurityContext != nil && main.SecurityContext.Privileged != nil && *main.SecurityContext.Privileged
				assert.Equal(t, *want.Privileged, got, "privileged")
			}
			if want.HostNetwork != nil && !dropped("hostNetwork", "*") {
				assert.Equal(t, *want.HostNetwork, pod.spec.HostNetwork, "hostNetwork")
			}
			for k, v := range want.Env {
				if dropped("env", k) {
					continue
				}
				got, ok := pod.env[k]
				if assert.True(t, ok, "env %s: the chart's pods had it", k) {
					assert.Equal(t, rename(v), got, "env %s", k)
				}
			}
			mounts := map[string]bool{}
			for _, m := range main.VolumeMounts {
				mounts[path.Clean(m.MountPath)] = true
			}
			for _, m := range want.Mounts {
				if !dropped("mounts", m) {
					assert.True(t, mounts[path.Clean(m)], "a volume mounted at %s, as the chart had (ours: %v)", m, slices.Sorted(maps.Keys(mounts)))
				}
			}
			ports, hostPorts := map[int32]bool{}, map[int32]bool{}
			for _, c := range append(slices.Clone(pod.spec.Containers), pod.spec.InitContainers...) {
				for _, p := range c.Ports {
					ports[p.ContainerPort] = true
					if p.HostPort != 0 {
						hostPorts[p.HostPort] = true
					}
				}
			}
			if pod.spec.HostNetwork {
				maps.Copy(hostPorts, ports)
			}
			for _, p := range want.Ports {
				if !dropped("ports", strconv.Itoa(int(p))) {
					assert.True(t, ports[p], "port %d", p)
				}
			}
			for _, p := range want.HostPorts {
				if !dropped("hostPorts", strconv.Itoa(int(p))) {
					assert.True(t, hostPorts[p], "host port %d", p)
				}
			}
			var tols []string
			for _, tol := range pod.spec.Tolerations {
				tols = append(tols, tol.Key+"="+tol.Value+":"+string(tol.Effect))
			}
			for _, tol := range want.Tolerations {
				if !dropped("tolerations", tol) {
					assert.Contains(t, tols, tol, "toleration")
				}
			}
			for k, v := range want.NodeSelector {
				if !dropped("nodeSelector", k) {
					assert.Equal(t, v, pod.spec.NodeSelector[k], "nodeSelector %s", k)
				}
			}
			for _, f := range want.Files {
				if !dropped("files", f) {
					assert.NotEmpty(t, r.file(t, pod, f), "file %s", f)
				}
			}
			for f, text := range want.FileText {
				if !dropped("files", f) {
					assert.Equal(t, rename(text), r.file(t, pod, f), "file %s", f)
				}
			}
			if len(want.SparkConf) > 0 {
				conf := r.sparkConf(t, pod)
				for k, v := range want.SparkConf {
					assert.Equal(t, rename(v), conf[k], "spark-defaults.conf: %s", k)
				}
			}
			ours := pod.runs(t, r)
			for _, line := range want.Runs {
				words, err := splitWords(rename(expand(line, "${", "}", want.Env)))
				require.NoError(t, err, line)
				if len(words) == 0 || dropped("runs", words[0]) {
					continue
				}
				want := commandOf(words, flags)
				assert.True(t, slices.ContainsFunc(ours, want.within),
					"the chart ran %q; none of ours does (ours: %q)", line, ours)
			}
		})
	}
	for _, want := range sc.Services {
		t.Run("service "+want.Chart, func(t *testing.T) {
			svc := r.service(t, want.Ours)
			if want.Type != "" && !dropped("serviceType", want.Chart) {
				typ := string(svc.Spec.Type)
				if typ == "" {
					typ = "ClusterIP"
				}
				assert.Equal(t, want.Type, typ, "Service type")
			}
			var ports []string
			for _, p := range svc.Spec.Ports {
				target := p.TargetPort.String()
				if n := r.portNamed(target); n != 0 {
					target = strconv.Itoa(int(n))
				}
				ports = append(ports, fmt.Sprintf("%d:%s", p.Port, target))
			}
			for _, p := range want.Ports {
				assert.Contains(t, ports, rename(p), "Service port")
			}
		})
	}
}

// rendered is the objects of one render.
type rendered struct{ objects []map[string]any }

func decodeStream(t *testing.T, out []byte) []map[string]any {
	var objs []map[string]any
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var o map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &o))
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

func (r rendered) find(t *testing.T, kind, name string, into any) {
	t.Helper()
	for _, o := range r.objects {
		md, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && md["name"] == name {
			b, err := json.Marshal(o)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, into))
			return
		}
	}
	t.Fatalf("no %s %s in the render", kind, name)
}

func (r rendered) service(t *testing.T, name string) corev1.Service {
	var s corev1.Service
	r.find(t, "Service", name, &s)
	return s
}

// portNamed: the container port of that name in the render's pods, or 0.
func (r rendered) portNamed(name string) int32 {
	for _, o := range r.objects {
		b, _ := json.Marshal(o)
		var w struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(b, &w) != nil {
			continue
		}
		for _, c := range w.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name {
					return p.ContainerPort
				}
			}
		}
	}
	return 0
}

// ourPod is a pod of ours as it would run: its spec and the environment
// of its main container, with $(VAR), ConfigMap keys and the completion
// index resolved as the kubelet does.
type ourPod struct {
	spec  corev1.PodSpec
	index int
	env   map[string]string
}

func (r rendered) pod(t *testing.T, ref seedRef) *ourPod {
	t.Helper()
	var spec corev1.PodSpec
	switch ref.Kind {
	case "Job":
		var j batchv1.Job
		r.find(t, "Job", ref.Name, &j)
		spec = j.Spec.Template.Spec
	case "Deployment":
		var d appsv1.Deployment
		r.find(t, "Deployment", ref.Name, &d)
		spec = d.Spec.Template.Spec
	default:
		t.Fatalf("ours.kind %q: Job or Deployment", ref.Kind)
	}
	p := &ourPod{spec: spec, index: ref.Index}
	p.env = r.envOf(t, p, spec.Containers[0].Env)
	return p
}

// envOf resolves a container's env as the kubelet does.
func (r rendered) envOf(t *testing.T, p *ourPod, env []corev1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = expand(v, "$(", ")", out)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			var cm corev1.ConfigMap
			r.find(t, "ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name, &cm)
			v = cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]
		case e.ValueFrom.FieldRef != nil && strings.Contains(e.ValueFrom.FieldRef.FieldPath, "job-completion-index"):
			v = strconv.Itoa(p.index)
		default:
			v = "<" + e.Name + " from the pod>"
		}
		out[e.Name] = v
	}
	return out
}

// sparkConf: the spark-defaults.conf the pod's SPARK_CONF_DIR holds.
func (r rendered) sparkConf(t *testing.T, p *ourPod) map[string]string {
	dir := p.env["SPARK_CONF_DIR"]
	require.NotEmpty(t, dir, "SPARK_CONF_DIR")
	text := r.file(t, p, path.Join(dir, "spark-defaults.conf"))
	conf := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			conf[k] = strings.TrimSpace(v)
		}
	}
	return conf
}

// file: the text of a file of the pod's main container that a ConfigMap
// volume holds.
func (r rendered) file(t *testing.T, p *ourPod, name string) string {
	t.Helper()
	for _, m := range p.spec.Containers[0].VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, name)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range p.spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			var cm corev1.ConfigMap
			r.find(t, "ConfigMap", v.ConfigMap.Name, &cm)
			key := rel
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					key = it.Key
				}
			}
			if text, ok := cm.Data[key]; ok {
				return text
			}
		}
	}
	t.Fatalf("no ConfigMap file %s in the pod", name)
	return ""
}

// runs: the command lines the pod's containers run, in words: each
// container's command and args, the runtime's wrapper taken off, sh -c's
// script split into its commands; the launcher's TS_EXEC; and what
// dask.sh starts (run for real, with a stub dask).
func (p *ourPod) runs(t *testing.T, r rendered) [][]string {
	var out [][]string
	add := func(env map[string]string, argv []string) {
		for i, a := range argv {
			argv[i] = expand(a, "$(", ")", env)
		}
		if i := slices.Index(argv, "--"); i > 0 && slices.Contains(argv[:i], "run") && strings.HasSuffix(argv[1], "runtime.sh") {
			argv = argv[i+1:]
		}
		// dask.sh's wrappers: run CMD, ui NAME CMD
		if len(argv) >= 4 && strings.HasSuffix(argv[1], "dask.sh") {
			switch argv[2] {
			case "run":
				argv = argv[3:]
			case "ui":
				argv = argv[4:]
			}
		}
		if len(argv) >= 3 && (argv[0] == "sh" || argv[0] == "bash" || argv[0] == "/bin/bash") && argv[1] == "-c" {
			for _, cmd := range regexp.MustCompile(`&&|;|\n`).Split(argv[2], -1) {
				if w, err := splitWords(cmd); err == nil && len(w) > 0 {
					if w[0] == "exec" && len(w) > 1 {
						w = w[1:] // the shell's exec: the same command, in the shell's place
					}
					out = append(out, w)
				}
			}
			return
		}
		out = append(out, argv)
	}
	for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
		env := r.envOf(t, p, c.Env)
		add(env, append(slices.Clone(c.Command), c.Args...))
		if x := env["TS_EXEC"]; x != "" {
			add(env, []string{"sh", "-c", x})
		}
		if len(c.Command) >= 3 && strings.HasSuffix(c.Command[1], "dask.sh") && c.Command[2] == "worker" {
			out = append(out, r.daskWorkers(t, p, env)...)
		}
	}
	return out
}

// daskWorkers runs the pod's dask.sh worker with a stub dask and mpi.sh,
// and returns the dask command lines it started.
func (r rendered) daskWorkers(t *testing.T, p *ourPod, env map[string]string) [][]string {
	dir := t.TempDir()
	script := r.file(t, p, "/etc/trainsonnet/dask.sh")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dask.sh"), []byte(script), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mpi.sh"),
		[]byte("i=0; while [ ! -s \"$TS_CONFIG_DIR/dask.log\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"), 0o644))
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	// The stub writes its whole line in one write: mpi.sh's stub ends once
	// the log is not empty, and the group is killed then (a line written
	// a word at a time was cut after its first word on a loaded machine).
	require.NoError(t, os.WriteFile(filepath.Join(bin, "dask"),
		[]byte("#!/bin/sh\nline=''; for a in \"$@\"; do line=\"$line$a\t\"; done; printf '%s\\n' \"$line\" >>\"$TS_CONFIG_DIR/dask.log\"\n"), 0o755))
	cmd := exec.Command("sh", filepath.Join(dir, "dask.sh"), "worker")
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TS_CONFIG_DIR=" + dir}
	for k, v := range env {
		if k != "PATH" && k != "TS_CONFIG_DIR" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	// Output to a file, and the group killed afterwards: dask.sh leaves
	// its loop of Dask workers behind when mpi.sh (here the stub) ends.
	outFile := filepath.Join(dir, "out")
	f, err := os.Create(outFile)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	out, _ := os.ReadFile(outFile)
	require.NoError(t, err, string(out))
	log, err := os.ReadFile(filepath.Join(dir, "dask.log"))
	require.NoError(t, err, string(out))
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		lines = append(lines, append([]string{"dask"}, strings.Split(strings.TrimSuffix(l, "\t"), "\t")...))
	}
	return lines
}

// gpus: the GPUs a container asks for (any extended resource named gpu).
func gpus(c corev1.Container) int64 {
	var n int64
	for name, q := range c.Resources.Limits {
		if strings.HasSuffix(string(name), "gpu") {
			n += q.Value()
		}
	}
	return n
}

// expand replaces open+NAME+end with env[NAME], leaving unknown names;
// for the kubelet's $(NAME), $$ is a $.
func expand(s, open, end string, env map[string]string) string {
	if open == "$(" {
		parts := strings.Split(s, "$$")
		for i, p := range parts {
			parts[i] = expandPlain(p, open, end, env)
		}
		return strings.Join(parts, "$")
	}
	return expandPlain(s, open, end, env)
}

func expandPlain(s, open, end string, env map[string]string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return b.String() + s
		}
		j := strings.Index(s[i+len(open):], end)
		if j < 0 {
			return b.String() + s
		}
		name := s[i+len(open) : i+len(open)+j]
		b.WriteString(s[:i])
		if v, ok := env[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+len(open)+j+len(end)])
		}
		s = s[i+len(open)+j+len(end):]
	}
}

// command is a command line as words: the program (the words before the
// first flag) and its flags with their values, paths cleaned.
type command struct {
	program []string
	flags   map[string]string
}

func commandOf(words []string, flagNames map[string]string) command {
	c := command{flags: map[string]string{}}
	i := 0
	for ; i < len(words) && !strings.HasPrefix(words[i], "-"); i++ {
		w := words[i]
		if strings.HasPrefix(w, "/") {
			w = path.Clean(w)
		}
		c.program = append(c.program, w)
	}
	for ; i < len(words); i++ {
		name, value, eq := strings.Cut(words[i], "=")
		if !eq && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
			value = words[i+1]
			i++
		}
		if ours, ok := flagNames[name]; ok {
			if ours == "" {
				continue
			}
			name = ours
		}
		if strings.HasPrefix(value, "/") {
			value = path.Clean(value)
		}
		c.flags[name] = value
	}
	return c
}

// within: ours (words) runs the same program with every flag of c.
func (c command) within(words []string) bool {
	ours := commandOf(words, nil)
	if !slices.Equal(c.program, ours.program) {
		return false
	}
	for k, v := range c.flags {
		if got, ok := ours.flags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

package check

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainsonnet/trainsonnet/generator/format"
)

// The one check every rendered pod passes through, whoever wrote the
// prototype (built-in or -J): the API server's own rules for a pod spec
// (k8s.io/kubernetes/pkg/apis/core/validation, which is not importable),
// the ones the kubelet and the container runtime add on top (a mount path
// is a directory, cleaned; an argument fits in what execve takes), and the
// image reference as the container ecosystem parses it. It runs on the
// typed objects after the strict decode (objects.go), before anything is
// written.
//
// A problem says where it is (field) and which rendered values it is
// about (at); explain.go names the user's parameter whose value it is, and
// only a problem no input explains is a bug in the prototype.

// A pod is one pod spec of a rendered object and where it is.
type pod struct {
	field string // "spec.template.spec"
	spec  *corev1.PodSpec
	// annotations of its template, when it has one (they reach the pods)
	annotations map[string]string
}

// podsOf returns the pod specs of a typed object: every kind of the
// groups trainsonnet knows that holds a pod template.
func podsOf(obj runtime.Object) []pod {
	tmpl := func(field string, t *corev1.PodTemplateSpec) []pod {
		return []pod{{field: field + ".spec", spec: &t.Spec, annotations: t.Annotations}}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return []pod{{field: "spec", spec: &o.Spec}}
	case *corev1.PodTemplate:
		return tmpl("template", &o.Template)
	case *corev1.ReplicationController:
		if o.Spec.Template != nil {
			return tmpl("spec.template", o.Spec.Template)
		}
	case *batchv1.Job:
		return tmpl("spec.template", &o.Spec.Template)
	case *batchv1.CronJob:
		return tmpl("spec.jobTemplate.spec.template", &o.Spec.JobTemplate.Spec.Template)
	case *appsv1.Deployment:
		return tmpl("spec.template", &o.Spec.Template)
	case *appsv1.StatefulSet:
		return tmpl("spec.template", &o.Spec.Template)
	case *appsv1.DaemonSet:
		return tmpl("spec.template", &o.Spec.Template)
	case *appsv1.ReplicaSet:
		return tmpl("spec.template", &o.Spec.Template)
	}
	return nil
}

// customPods finds the pod specs in a custom resource (a Kubeflow MPIJob's
// replica templates, say): every map with a list of containers, at any
// depth, that decodes as a core/v1 PodSpec. The rest of a custom resource
// is its own business.
func customPods(v any, field string, out *[]pod) {
	switch x := v.(type) {
	case map[string]any:
		if cs, ok := x["containers"].([]any); ok && len(cs) > 0 {
			if raw, err := json.Marshal(x); err == nil {
				var spec corev1.PodSpec
				if json.Unmarshal(raw, &spec) == nil {
					*out = append(*out, pod{field: field, spec: &spec})
					return
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			customPods(x[k], dotted(field, k), out)
		}
	case []any:
		for i, e := range x {
			customPods(e, field+"["+strconv.Itoa(i)+"]", out)
		}
	}
}

// Sizes the kernel and the API server allow.
const (
	// maxArg is the longest argument or NAME=value the kernel's execve
	// takes (MAX_ARG_STRLEN, 32 pages, with its terminating NUL).
	maxArg = 128*1024 - 1
	// maxExecBytes bounds a container's command, arguments and env
	// together: half of the usual ARG_MAX (2 MiB), as the image's own env
	// and what the kubelet adds come on top, and well inside what one
	// object may hold in etcd (1.5 MiB).
	maxExecBytes = 1024 * 1024
	// maxAnnotationBytes is what the annotations of one object may total:
	// the API server's 256 KiB, less room for the annotations that
	// Kubernetes' controllers add to the ReplicaSets and pods they make
	// from a template (revision, replica counts, completion index, a
	// restart's time): at the API's limit itself the objects apply, and
	// the pods are never created.
	maxAnnotationBytes = 256*1024 - 4*1024
)

// checkPod applies the rules to one pod spec of object at field.
func checkPod(object string, p pod) []Problem {
	c := &podChecker{object: object, field: p.field, spec: p.spec, volumes: map[string]*corev1.Volume{}}
	c.checkVolumes()
	ports := map[string]string{} // "port/protocol" -> who declared it first
	for i := range p.spec.InitContainers {
		c.checkContainer("initContainers", i, &p.spec.InitContainers[i], ports)
	}
	for i := range p.spec.Containers {
		c.checkContainer("containers", i, &p.spec.Containers[i], ports)
	}
	c.checkMemoryVolumes()
	if p.annotations != nil {
		c.out = append(c.out, checkAnnotationSize(object, strings.TrimSuffix(p.field, ".spec")+".metadata.annotations", p.annotations)...)
	}
	return c.out
}

// checkMemoryVolumes: a memory-backed emptyDir's sizeLimit is at most the
// pod's memory limit, at which the kubelet caps it: a larger one has no
// effect (a /dev/shm of 16Gi in a pod limited to 8Gi holds 8Gi).
func (c *podChecker) checkMemoryVolumes() {
	limit := podMemoryLimit(c.spec)
	if limit == nil {
		return
	}
	for i, v := range c.spec.Volumes {
		ed := v.EmptyDir
		if ed == nil || ed.Medium != corev1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Cmp(*limit) <= 0 {
			continue
		}
		c.add(fmt.Sprintf("volumes[%d].emptyDir.sizeLimit", i),
			fmt.Sprintf("volume %s is in memory, and the kubelet caps it at the pod's memory limit, %s: a larger size has no effect; raise the memory limit, or ask for at most that", v.Name, limit),
			ed.SizeLimit.String())
	}
}

// podMemoryLimit is the memory limit of a pod as the kubelet counts it
// (its containers' and sidecars' together, or an init container's if
// larger), or nil when a container has none (the pod has no limit).
func podMemoryLimit(spec *corev1.PodSpec) *resource.Quantity {
	sum := resource.Quantity{}
	for _, ct := range spec.Containers {
		l, ok := ct.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return nil
		}
		sum.Add(l)
	}
	var inits []resource.Quantity
	for _, ct := range spec.InitContainers {
		l, ok := ct.Resources.Limits[corev1.ResourceMemory]
		sidecar := ct.RestartPolicy != nil && *ct.RestartPolicy == corev1.ContainerRestartPolicyAlways
		switch {
		case sidecar && !ok:
			return nil
		case sidecar:
			sum.Add(l)
		case ok:
			inits = append(inits, l)
		}
	}
	for _, l := range inits {
		if l.Cmp(sum) > 0 {
			sum = l
		}
	}
	return &sum
}

// checkAnnotationSize holds annotations to maxAnnotationBytes.
func checkAnnotationSize(object, field string, a map[string]string) []Problem {
	total := 0
	for k, v := range a {
		total += len(k) + len(v)
	}
	if total <= maxAnnotationBytes {
		return nil
	}
	return []Problem{{Object: object, Field: field, At: []any{a},
		Rule: fmt.Sprintf("annotations total %d bytes; at most %d (%d KiB) hold: the API server takes 256 KiB, and Kubernetes' controllers add annotations of their own to the pods and ReplicaSets they make", total, maxAnnotationBytes, maxAnnotationBytes/1024)}}
}

// The sizes the API server and etcd take: a ConfigMap's or Secret's data
// (k8s.io/kubernetes/pkg/apis/core: MaxSecretSize), and an object as a
// whole (etcd's default --max-request-bytes, 1.5 MiB; the API server
// refuses a request body over 3 MiB before that).
const (
	maxDataBytes   = 1 << 20
	maxObjectBytes = 3 << 19
)

// checkSize: o, decoded as m and size bytes as JSON, fits in what the API
// server and etcd take. A problem is about the largest texts of the
// object, where the input that made it big shows (explain.go).
func checkSize(o *Object, m map[string]any, size int) []Problem {
	var out []Problem
	if o.APIVersion == "v1" && (o.Kind == "ConfigMap" || o.Kind == "Secret") {
		total := 0
		var texts []string
		for _, f := range []string{"data", "binaryData", "stringData"} {
			d, _ := m[f].(map[string]any)
			for _, v := range d {
				s, _ := v.(string)
				n := len(s)
				if f == "binaryData" || o.Kind == "Secret" && f == "data" {
					n = base64.StdEncoding.DecodedLen(len(s)) // the bytes it stands for
				}
				total += n
				texts = append(texts, s)
			}
		}
		if total > maxDataBytes {
			out = append(out, Problem{Object: o.ID(), Field: "data", At: largest(texts),
				Rule: fmt.Sprintf("makes the %s's data %s; the API server takes at most 1 MiB (1048576 bytes) of data in a %s", o.Kind, sizeText(total), o.Kind)})
		}
	}
	if size > maxObjectBytes {
		var texts []string
		stringsOf(m, &texts)
		out = append(out, Problem{Object: o.ID(), Field: "(the object)", At: largest(texts),
			Rule: fmt.Sprintf("makes the %s %s as JSON; etcd stores an object of at most 1.5 MiB (its default --max-request-bytes)", o.Kind, sizeText(size))})
	}
	return out
}

// largest are the three longest of texts, longest first.
func largest(texts []string) []any {
	slices.SortFunc(texts, func(a, b string) int { return len(b) - len(a) })
	out := make([]any, 0, 3)
	for i := 0; i < len(texts) && i < 3; i++ {
		out = append(out, texts[i])
	}
	return out
}

// stringsOf appends the strings of the decoded JSON v to out.
func stringsOf(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			stringsOf(e, out)
		}
	case []any:
		for _, e := range x {
			stringsOf(e, out)
		}
	}
}

func sizeText(n int) string {
	return fmt.Sprintf("%d bytes (%.2f MiB)", n, float64(n)/(1<<20))
}

type podChecker struct {
	object  string
	field   string
	spec    *corev1.PodSpec
	volumes map[string]*corev1.Volume
	out     []Problem
}

func (c *podChecker) add(field, rule string, at ...any) {
	c.out = append(c.out, Problem{Object: c.object, Field: c.field + "." + field, Rule: rule, At: at})
}

// checkVolumes: names unique DNS labels; one source each, held to the API
// server's rules.
func (c *podChecker) checkVolumes() {
	for i := range c.spec.Volumes {
		v := &c.spec.Volumes[i]
		f := "volumes[" + strconv.Itoa(i) + "]"
		if msgs := validation.IsDNS1123Label(v.Name); len(msgs) > 0 {
			c.add(f+".name", "volume name "+strconv.Quote(v.Name)+": "+strings.Join(msgs, "; "), v.Name)
		}
		if _, dup := c.volumes[v.Name]; dup {
			c.add(f+".name", "two volumes of the pod are named "+v.Name+" (trainsonnet's own volumes are named trainsonnet-*): rename yours", v.Name)
			continue
		}
		c.volumes[v.Name] = v
		c.checkSource(f, v)
	}
}

func (c *podChecker) checkSource(f string, v *corev1.Volume) {
	src := reflect.ValueOf(v.VolumeSource)
	var kinds []string
	for i := 0; i < src.NumField(); i++ {
		if !src.Field(i).IsNil() {
			name, _, _ := strings.Cut(src.Type().Field(i).Tag.Get("json"), ",")
			kinds = append(kinds, name)
		}
	}
	what := "volume " + v.Name
	switch {
	case len(kinds) == 0:
		c.add(f, what+" needs a source (emptyDir, persistentVolumeClaim, configMap, secret, nfs, csi, ...)", v.Name)
		return
	case len(kinds) > 1:
		c.add(f, what+" must have one source, not "+strings.Join(kinds, " and "), v.Name)
		return
	}
	f += "." + kinds[0]
	s := &v.VolumeSource
	switch {
	case s.EmptyDir != nil:
		if l := s.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			c.add(f+".sizeLimit", what+": emptyDir.sizeLimit "+l.String()+" must not be negative", l.String())
		}
	case s.ConfigMap != nil:
		c.mode(f+".defaultMode", what, s.ConfigMap.DefaultMode)
		c.items(f, what, s.ConfigMap.Items)
	case s.Secret != nil:
		c.mode(f+".defaultMode", what, s.Secret.DefaultMode)
		c.items(f, what, s.Secret.Items)
	case s.DownwardAPI != nil:
		c.mode(f+".defaultMode", what, s.DownwardAPI.DefaultMode)
		for i, it := range s.DownwardAPI.Items {
			c.itemPath(f+".items["+strconv.Itoa(i)+"].path", what, it.Path)
			c.mode(f+".items["+strconv.Itoa(i)+"].mode", what, it.Mode)
		}
	case s.Projected != nil:
		c.mode(f+".defaultMode", what, s.Projected.DefaultMode)
		for i, ps := range s.Projected.Sources {
			pf := f + ".sources[" + strconv.Itoa(i) + "]"
			switch {
			case ps.ConfigMap != nil:
				c.items(pf+".configMap", what, ps.ConfigMap.Items)
			case ps.Secret != nil:
				c.items(pf+".secret", what, ps.Secret.Items)
			case ps.DownwardAPI != nil:
				for j, it := range ps.DownwardAPI.Items {
					c.itemPath(pf+".downwardAPI.items["+strconv.Itoa(j)+"].path", what, it.Path)
					c.mode(pf+".downwardAPI.items["+strconv.Itoa(j)+"].mode", what, it.Mode)
				}
			case ps.ServiceAccountToken != nil:
				c.itemPath(pf+".serviceAccountToken.path", what, ps.ServiceAccountToken.Path)
			}
		}
	case s.NFS != nil:
		if !path.IsAbs(s.NFS.Path) {
			c.add(f+".path", what+": nfs.path "+strconv.Quote(s.NFS.Path)+" must be an absolute path on the server", s.NFS.Path)
		}
		if s.NFS.Server == "" {
			c.add(f+".server", what+": nfs.server is required")
		}
	case s.HostPath != nil:
		if s.HostPath.Path == "" || hasBackstep(s.HostPath.Path) {
			c.add(f+".path", what+": hostPath.path "+strconv.Quote(s.HostPath.Path)+" must be a path without ..", s.HostPath.Path)
		}
	case s.PersistentVolumeClaim != nil:
		if s.PersistentVolumeClaim.ClaimName == "" {
			c.add(f+".claimName", what+": persistentVolumeClaim.claimName is required")
		}
	case s.CSI != nil:
		if s.CSI.Driver == "" {
			c.add(f+".driver", what+": csi.driver is required")
		}
	}
}

// mode: the API server's range of a file mode, 0 to 0777.
func (c *podChecker) mode(f, what string, m *int32) {
	if m != nil && (*m < 0 || *m > 0o777) {
		c.add(f, fmt.Sprintf("%s: file mode %d must be between 0 and 0777 (octal; 511 in decimal), such as 0644 (420)", what, *m), *m)
	}
}

func (c *podChecker) items(f, what string, items []corev1.KeyToPath) {
	for i, it := range items {
		itf := f + ".items[" + strconv.Itoa(i) + "]"
		if it.Key == "" {
			c.add(itf+".key", what+": every item needs a key")
		}
		c.itemPath(itf+".path", what, it.Path)
		c.mode(itf+".mode", what, it.Mode)
	}
}

// itemPath: a file a volume makes, relative to the volume and inside it.
func (c *podChecker) itemPath(f, what, p string) {
	switch {
	case p == "":
		c.add(f, what+": every item needs a path")
	case path.IsAbs(p):
		c.add(f, what+": item path "+strconv.Quote(p)+" must be relative to the volume", p)
	case hasBackstep(p) || strings.HasPrefix(p, ".."):
		c.add(f, what+": item path "+strconv.Quote(p)+" must stay inside the volume (no ..)", p)
	}
}

func hasBackstep(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// readOnlyByNature: volumes whose directory the kubelet writes and mounts
// read-only: nothing can be mounted inside them.
func readOnlyByNature(v *corev1.Volume) string {
	switch {
	case v.ConfigMap != nil:
		return "configMap"
	case v.Secret != nil:
		return "secret"
	case v.DownwardAPI != nil:
		return "downwardAPI"
	case v.Projected != nil:
		return "projected"
	}
	return ""
}

// runtimeDirs are where the container runtime mounts what every container
// has: a volume at or under them cannot be mounted, or hides it.
var runtimeDirs = []string{"/proc", "/sys", "/dev"}

type mountAt struct {
	m     *corev1.VolumeMount
	clean string
}

func (c *podChecker) checkContainer(list string, i int, ct *corev1.Container, ports map[string]string) {
	f := list + "[" + strconv.Itoa(i) + "]"
	who := "container " + ct.Name
	c.checkImage(f+".image", who, ct.Image)
	privileged := ct.SecurityContext != nil && ct.SecurityContext.Privileged != nil && *ct.SecurityContext.Privileged
	var mounts []mountAt
	for j := range ct.VolumeMounts {
		m := &ct.VolumeMounts[j]
		mf := f + ".volumeMounts[" + strconv.Itoa(j) + "]"
		if _, ok := c.volumes[m.Name]; !ok {
			c.add(mf+".name", who+" mounts volume "+strconv.Quote(m.Name)+", which the pod does not have: add it to volumes", m.Name)
		}
		if !path.IsAbs(m.MountPath) {
			c.add(mf+".mountPath", who+": mount path "+strconv.Quote(m.MountPath)+" must be an absolute path", m.MountPath)
			continue
		}
		clean := path.Clean(m.MountPath)
		spelled := ""
		if clean != m.MountPath {
			spelled = " (that is " + clean + ")"
		}
		if clean == "/" {
			c.add(mf+".mountPath", who+": mount path "+m.MountPath+spelled+" would hide the whole image", m.MountPath)
			continue
		}
		for _, d := range runtimeDirs {
			if clean == d || (d != "/dev" && strings.HasPrefix(clean, d+"/")) {
				c.add(mf+".mountPath", who+": mount path "+m.MountPath+spelled+" is where the container runtime mounts "+d, m.MountPath)
			}
		}
		for _, o := range mounts {
			switch {
			case o.clean == clean:
				c.add(mf+".mountPath", fmt.Sprintf("%s mounts two volumes at one directory, %s: %s at %s and %s at %s", who, clean, o.m.Name, o.m.MountPath, m.Name, m.MountPath), m.MountPath, o.m.MountPath)
			case strings.HasPrefix(clean, o.clean+"/") && c.volumes[o.m.Name] != nil && readOnlyByNature(c.volumes[o.m.Name]) != "":
				c.add(mf+".mountPath", fmt.Sprintf("%s: mount path %s%s is inside %s, where the %s volume %s is mounted read-only: nothing can be mounted in it", who, m.MountPath, spelled, o.clean, readOnlyByNature(c.volumes[o.m.Name]), o.m.Name), m.MountPath, o.m.MountPath)
			case strings.HasPrefix(o.clean, clean+"/") && c.volumes[m.Name] != nil && readOnlyByNature(c.volumes[m.Name]) != "":
				c.add(mf+".mountPath", fmt.Sprintf("%s: mount path %s%s holds %s, where volume %s is mounted, but the %s volume %s is read-only: nothing can be mounted in it", who, m.MountPath, spelled, o.clean, o.m.Name, readOnlyByNature(c.volumes[m.Name]), m.Name), m.MountPath, o.m.MountPath)
			}
		}
		mounts = append(mounts, mountAt{m: m, clean: clean})
		c.checkSubPath(mf, who, m)
		if mp := m.MountPropagation; mp != nil {
			switch *mp {
			case corev1.MountPropagationNone, corev1.MountPropagationHostToContainer:
			case corev1.MountPropagationBidirectional:
				if !privileged {
					c.add(mf+".mountPropagation", who+": mountPropagation Bidirectional needs a privileged container", string(*mp))
				}
			default:
				c.add(mf+".mountPropagation", who+": mountPropagation "+strconv.Quote(string(*mp))+" must be None, HostToContainer or Bidirectional", string(*mp))
			}
		}
	}
	c.checkPorts(f, who, ct, ports)
	c.checkExec(f, who, ct)
}

func (c *podChecker) checkSubPath(mf, who string, m *corev1.VolumeMount) {
	for _, sp := range []struct{ name, value string }{{"subPath", m.SubPath}, {"subPathExpr", m.SubPathExpr}} {
		switch {
		case sp.value == "":
		case path.IsAbs(sp.value):
			c.add(mf+"."+sp.name, who+": "+sp.name+" "+strconv.Quote(sp.value)+" must be a path relative to the volume", sp.value)
		case hasBackstep(sp.value):
			c.add(mf+"."+sp.name, who+": "+sp.name+" "+strconv.Quote(sp.value)+" must stay inside the volume (no ..)", sp.value)
		}
	}
	if m.SubPath != "" && m.SubPathExpr != "" {
		c.add(mf+".subPathExpr", who+": a mount has subPath or subPathExpr, not both", m.SubPathExpr, m.SubPath)
	}
}

// checkImage parses a container's image reference as the kubelet and the
// registries do (github.com/distribution/reference).
func (c *podChecker) checkImage(f, who, image string) {
	if image == "" {
		c.add(f, who+" needs an image")
		return
	}
	if msg := imageRule(image); msg != "" {
		c.add(f, who+": "+msg, image)
	}
}

// imageRule returns what is wrong with an image reference, or "": the
// rule of the image format (generator/format).
func imageRule(image string) string { return format.Get("image").Check(image) }

// checkPorts: valid numbers and names, names once per container, and
// each port and protocol once per pod.
func (c *podChecker) checkPorts(f, who string, ct *corev1.Container, ports map[string]string) {
	names := map[string]bool{}
	for j, p := range ct.Ports {
		pf := f + ".ports[" + strconv.Itoa(j) + "]"
		if msgs := validation.IsValidPortNum(int(p.ContainerPort)); len(msgs) > 0 {
			c.add(pf+".containerPort", fmt.Sprintf("%s: port %d: %s", who, p.ContainerPort, strings.Join(msgs, "; ")), p.ContainerPort)
			continue
		}
		if p.Name != "" {
			if msgs := validation.IsValidPortName(p.Name); len(msgs) > 0 {
				c.add(pf+".name", who+": port name "+strconv.Quote(p.Name)+": "+strings.Join(msgs, "; "), p.Name)
			}
			if names[p.Name] {
				c.add(pf+".name", who+": port name "+p.Name+" is used twice", p.Name)
			}
			names[p.Name] = true
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		key := strconv.Itoa(int(p.ContainerPort)) + "/" + string(proto)
		this := who + " (" + cmp.Or(p.Name, "unnamed") + ")"
		if prev, dup := ports[key]; dup {
			c.add(pf+".containerPort", fmt.Sprintf("port %s is declared twice in one pod, by %s and by %s: each port of a pod is its own", key, prev, this), p.ContainerPort)
			continue
		}
		ports[key] = this
	}
}

// checkExec: what reaches execve, the command, arguments and env: no NUL
// byte (a C string ends there), each argument and NAME=value within what
// the kernel takes, all of it within maxExecBytes; env names as the API
// server takes them, each once.
func (c *podChecker) checkExec(f, who string, ct *corev1.Container) {
	total := 0
	arg := func(af, what, s string) {
		total += len(s) + 1
		switch {
		case strings.IndexByte(s, 0) >= 0:
			c.add(af, who+": "+what+" holds a NUL byte, which no program can be given", s)
		case len(s) > maxArg:
			c.add(af, fmt.Sprintf("%s: %s is %d bytes; the kernel takes at most %d (128 KiB) in one argument or variable", who, what, len(s), maxArg), s)
		}
	}
	for i, s := range ct.Command {
		arg(f+".command["+strconv.Itoa(i)+"]", "the command", kubeletText(s))
	}
	for i, s := range ct.Args {
		arg(f+".args["+strconv.Itoa(i)+"]", "an argument", kubeletText(s))
	}
	if strings.IndexByte(ct.WorkingDir, 0) >= 0 {
		c.add(f+".workingDir", who+": workingDir holds a NUL byte", ct.WorkingDir)
	}
	seen := map[string]bool{}
	for i, e := range ct.Env {
		ef := f + ".env[" + strconv.Itoa(i) + "]"
		if msg := envNameRule(e.Name); msg != "" {
			c.add(ef+".name", who+": variable name "+strconv.Quote(e.Name)+" "+msg, e.Name)
		}
		if seen[e.Name] {
			c.add(ef+".name", "variable "+e.Name+" is set twice in "+who+" (the last would win): trainsonnet sets it itself, or another of your inputs does", e.Name, kubeletText(e.Value))
		}
		seen[e.Name] = true
		if e.ValueFrom == nil {
			arg(ef+".value", "variable "+e.Name, e.Name+"="+kubeletText(e.Value))
		}
	}
	if total > maxExecBytes && len(c.out) == 0 {
		var at []any
		for _, e := range ct.Env {
			at = append(at, kubeletText(e.Value))
		}
		for _, s := range append(append([]string{}, ct.Command...), ct.Args...) {
			at = append(at, kubeletText(s))
		}
		c.add(f, fmt.Sprintf("%s: its command, arguments and env total %d bytes; at most %d (1 MiB) fit in one pod", who, total, maxExecBytes), at...)
	}
}

// envNameRule is the API server's rule for an env name: printable ASCII
// but =, not empty.
func envNameRule(n string) string {
	if n == "" {
		return "must not be empty"
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 0x20 || n[i] > 0x7e || n[i] == '=' {
			return "must be printable ASCII without ="
		}
	}
	return ""
}

// kubeletText is what the kubelet makes of a command, argument or env
// value: $$ is $ (generator/internal/dollar escapes every $ of the user's text so).
func kubeletText(s string) string {
	if !strings.Contains(s, "$$") {
		return s
	}
	return strings.ReplaceAll(s, "$$", "$")
}

// checkService: a Service's ports, each port and protocol and each name
// once (the API server refuses the Service otherwise).
func checkService(object string, svc *corev1.Service) []Problem {
	var out []Problem
	seen, names := map[string]string{}, map[string]bool{}
	for i, p := range svc.Spec.Ports {
		f := "spec.ports[" + strconv.Itoa(i) + "]"
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		key := strconv.Itoa(int(p.Port)) + "/" + string(proto)
		if prev, dup := seen[key]; dup {
			out = append(out, Problem{Object: object, Field: f + ".port", At: []any{p.Port},
				Rule: fmt.Sprintf("Service %s would list port %s twice, as %s and as %s: each port of its pods is its own", svc.Name, key, prev, cmp.Or(p.Name, "unnamed"))})
			continue
		}
		seen[key] = cmp.Or(p.Name, "unnamed")
		if p.Name != "" && names[p.Name] {
			out = append(out, Problem{Object: object, Field: f + ".name", At: []any{p.Name},
				Rule: "Service " + svc.Name + " would have two ports named " + p.Name})
		}
		names[p.Name] = true
	}
	return out
}

package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/trainsonnet/trainsonnet/generator/internal/dollar"
	"github.com/trainsonnet/trainsonnet/generator/internal/yamlenc"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Object is one rendered object, decoded and checked.
type Object struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Tree is the object as the prototype made it, decoded (maps, lists,
	// strings, numbers as int64 or float64), with the text of each large
	// string in place of its reference, ready for yamlenc.Document.
	Tree any
	// Custom marks a kind of an API group trainsonnet has no types for
	// (a custom resource): passed through with its metadata checked.
	Custom bool
	// YAML11 says that Tree holds strings YAML 1.1 readers would misread
	// (generator/internal/yamlenc).
	YAML11 bool
	// Raw is Tree as JSON, from its check, when no reference was replaced
	// after it (nil otherwise): JSON need not encode the object again.
	Raw []byte
	// ownConfigMaps are the job's own ConfigMaps its pods mount
	// (ownConfigMapsOf), which the render must make.
	ownConfigMaps []ownConfigMap
}

// Resolver puts the text of each large string of an object in the place
// of its reference, once the object is checked: replaced says whether it
// did, grown by how many bytes the object grew. nil: the objects hold no
// references.
type Resolver func(apiVersion, kind string, tree map[string]any) (replaced bool, grown int, err error)

// ID is "Kind/name", or "Kind namespace/name" when the object is namespaced.
func (o *Object) ID() string {
	if o == nil {
		return ""
	}
	name := o.Name
	if name == "" {
		name = "(no name)"
	}
	if o.Namespace != "" {
		return o.Kind + " " + o.Namespace + "/" + name
	}
	return o.Kind + " " + name
}

// scheme knows the Go types of the kinds of the API groups trainsonnet
// knows. Each object of those groups is strictly decoded into its type
// before it is returned, so a typo in a prototype can never reach a user;
// objects of other groups (custom resources such as a Kubeflow MPIJob) are
// passed through with their metadata checked (checkCustom). Built on first
// use: commands that do not render (list, describe) should not pay for it.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, networkingv1.AddToScheme,
		rbacv1.AddToScheme, policyv1.AddToScheme, schedulingv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // the built-in schemes always register
		}
	}
	return s
})

// kindOrder is the one order objects are emitted in, in the YAML stream,
// the JSON List and the kustomize base alike: what others refer to first.
// Other kinds of the groups trainsonnet knows follow, by kind, and then the
// kinds it does not know, by API group and kind (objectLess).
var kindOrder = []string{
	"Namespace", "ResourceQuota", "LimitRange", "PriorityClass", "NetworkPolicy",
	"ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim",
	"Role", "RoleBinding", "Service", "PodDisruptionBudget",
	"DaemonSet", "Deployment", "StatefulSet", "Job", "CronJob", "Pod",
}

func kindRank(kind string) int {
	for i, k := range kindOrder {
		if k == kind {
			return i
		}
	}
	return len(kindOrder)
}

// Objects decodes, checks and orders what a prototype emitted (each
// object as Go values, numbers as float64 or json.Number). What does not
// decode into its type, or is emitted twice, is a bug in the prototype,
// reported with the prototype, object and field named; the problems of
// metadata and pods (podcheck.go) come back for explain.go to name the
// input they come from (generator/explain.go).
func Objects(proto string, items []any, resolve Resolver, dollars bool) ([]*Object, []Problem, error) {
	objs := make([]*Object, 0, len(items))
	seen := map[string]bool{}
	var errs []string
	var problems []Problem
	for i, item := range items {
		o, probs, err := checkObject1(item, resolve, dollars)
		problems = append(problems, probs...)
		if err != nil {
			what := fmt.Sprintf("object %d", i)
			if o != nil && o.Kind != "" {
				what = o.ID()
			}
			errs = append(errs, fmt.Sprintf("%s: %s: %v", proto, what, err))
			continue
		}
		key := o.APIVersion + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name
		if seen[key] {
			errs = append(errs, fmt.Sprintf("%s: %s is emitted twice", proto, o.ID()))
			continue
		}
		seen[key] = true
		objs = append(objs, o)
	}
	errs = append(errs, missingConfigMaps(proto, objs)...)
	if len(errs) > 0 {
		for _, pb := range problems { // beside a bug, all are the prototype's
			errs = append(errs, pb.String(proto))
		}
		return nil, nil, fmt.Errorf("prototype bug: %s", strings.Join(errs, "\n"))
	}
	sort.SliceStable(objs, func(i, j int) bool { return objectLess(objs[i], objs[j]) })
	return objs, problems, nil
}

// objectLess is the one order of objects: the kinds trainsonnet knows in
// kindOrder, its other kinds by kind, then custom kinds by API group and
// kind; objects of one kind by namespace and name.
func objectLess(a, b *Object) bool {
	if ra, rb := a.rank(), b.rank(); ra != rb {
		return ra < rb
	}
	if a.Custom {
		if ga, gb := apiGroup(a.APIVersion), apiGroup(b.APIVersion); ga != gb {
			return ga < gb
		}
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.APIVersion != b.APIVersion {
		return a.APIVersion < b.APIVersion
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func (o *Object) rank() int {
	if o.Custom {
		return len(kindOrder) + 1
	}
	return kindRank(o.Kind)
}

// apiGroup is the group of an apiVersion: "kubeflow.org" of
// "kubeflow.org/v2beta1", "" of "v1".
func apiGroup(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// checkObject1 strictly decodes one object into its k8s.io/api type and
// checks its metadata and its pods (podcheck.go); an object of an API
// group trainsonnet has no types for gets only the checks of checkCustom
// and of the pods found in it. Then the text of each large string takes
// the place of its reference (resolve), and the decoded tree is kept
// for the outputs. dollars says that the user's text holds $, marked to
// be escaped for the kubelet (generator/internal/dollar).
func checkObject1(item any, resolve Resolver, dollars bool) (*Object, []Problem, error) {
	m, ok := item.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("not an object but %s", param.Brief(param.Show(item)))
	}
	o := &Object{}
	o.APIVersion, _ = m["apiVersion"].(string)
	o.Kind, _ = m["kind"].(string)
	if meta, ok := m["metadata"].(map[string]any); ok {
		o.Name, _ = meta["name"].(string)
		o.Namespace, _ = meta["namespace"].(string)
	}
	if dollars {
		dollar.Escape(m)
	}
	problems, err := checkTree(o, m)
	if err != nil {
		return o, nil, err
	}
	size := len(o.Raw)
	if resolve != nil {
		replaced, grown, err := resolve(o.APIVersion, o.Kind, m)
		if err != nil {
			return o, nil, err
		}
		if replaced {
			o.Raw = nil
		}
		size += grown
	}
	problems = append(problems, checkSize(o, m, size)...)
	o.Tree, o.YAML11 = m, yamlenc.Prepare(m)
	return o, problems, nil
}

// apiVersionOf is ": a <kind> is apiVersion: <v>", for the kinds of
// k8s.io/api, or "".
func apiVersionOf(kind string) string {
	var known []string
	for gvk := range scheme().AllKnownTypes() {
		if gvk.Kind == kind && gvk.Version != "__internal" {
			known = append(known, gvk.GroupVersion().String())
		}
	}
	if len(known) == 0 {
		return ""
	}
	sort.Strings(known)
	return fmt.Sprintf(": a %s is apiVersion: %s", kind, strings.Join(known, " or "))
}

// checkTree strictly decodes the object m, as JSON, into its k8s.io/api
// type and checks it; a custom resource gets its own checks.
func checkTree(o *Object, m map[string]any) ([]Problem, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	o.Raw = raw
	if o.APIVersion == "" {
		return nil, fmt.Errorf("the object has no apiVersion%s", apiVersionOf(o.Kind))
	}
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil || o.Kind == "" {
		return nil, fmt.Errorf("apiVersion %q and kind %q do not name a type", o.APIVersion, o.Kind)
	}
	typed, err := scheme().New(gv.WithKind(o.Kind))
	if err != nil && scheme().IsGroupRegistered(gv.Group) {
		// A kind trainsonnet knows the group of: a typo, or a version it
		// does not have, never a custom resource.
		return nil, fmt.Errorf("%s %s is not a type trainsonnet knows (k8s.io/api)", o.APIVersion, o.Kind)
	}
	if err != nil {
		errs, err := checkCustom(gv, o.Kind, raw)
		if err != nil {
			return nil, err
		}
		o.Custom = true
		if gv.Group == jobSetGroup && o.Kind == "JobSet" {
			if err := checkJobSetJobs(m); err != nil {
				return nil, err
			}
		}
		problems := fieldProblems(o.ID(), errs)
		if md, ok := m["metadata"].(map[string]any); ok {
			if a, ok := md["annotations"].(map[string]any); ok {
				as := make(map[string]string, len(a))
				for k, v := range a {
					as[k], _ = v.(string)
				}
				problems = append(problems, checkAnnotationSize(o.ID(), "metadata.annotations", as)...)
			}
		}
		var pods []pod
		customPods(m, "", &pods)
		for _, p := range pods {
			problems = append(problems, checkPod(o.ID(), p)...)
			o.ownConfigMaps = append(o.ownConfigMaps, ownConfigMapsOf(p)...)
		}
		return problems, nil
	}
	strict, err := sigsjson.UnmarshalStrict(raw, typed)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	problems := fieldProblems(o.ID(), checkMeta(typed))
	if acc, err := meta.Accessor(typed); err == nil {
		problems = append(problems, checkAnnotationSize(o.ID(), "metadata.annotations", acc.GetAnnotations())...)
	}
	for _, p := range podsOf(typed) {
		problems = append(problems, checkPod(o.ID(), p)...)
		o.ownConfigMaps = append(o.ownConfigMaps, ownConfigMapsOf(p)...)
	}
	if svc, ok := typed.(*corev1.Service); ok {
		problems = append(problems, checkService(o.ID(), svc)...)
	}
	return problems, nil
}

// fieldProblems turns the API server's errors into problems, each about
// its bad value.
func fieldProblems(object string, errs field.ErrorList) []Problem {
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		if e.Type == field.ErrorTypeTooLong && strings.HasSuffix(e.Field, "annotations") {
			continue // checkAnnotationSize, with the room controllers need
		}
		rule := e.Detail
		if rule == "" {
			rule = e.Type.String()
		}
		out = append(out, Problem{Object: object, Field: e.Field, Rule: e.Field + ": " + rule, Bug: e.ErrorBody(), At: []any{e.BadValue}})
	}
	return out
}

// checkMeta applies the API server's rules for names, namespaces, labels
// and annotations, which a typed decode cannot see.
func checkMeta(obj runtime.Object) field.ErrorList {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil // no metadata to check
	}
	var errs field.ErrorList
	metaPath := field.NewPath("metadata")
	var tmplLabels, tmplAnnotations map[string]string
	nameRule := validation.IsDNS1123Subdomain
	if t, ok := templateMeta(obj); ok {
		tmplLabels, tmplAnnotations = t.Labels, t.Annotations
	}
	switch o := obj.(type) {
	case *corev1.Service:
		nameRule = validation.IsDNS1035Label
	case *batchv1.Job:
		if msgs := validation.IsValidLabelValue(o.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(metaPath.Child("name"), o.Name, "a Job's name becomes a label value: "+strings.Join(msgs, "; ")))
		}
		if o.Spec.CompletionMode != nil && *o.Spec.CompletionMode == batchv1.IndexedCompletion && o.Spec.Completions != nil {
			host := o.Name + "-" + strconv.Itoa(int(*o.Spec.Completions)-1)
			if msgs := validation.IsDNS1123Label(host); len(msgs) > 0 {
				errs = append(errs, field.Invalid(metaPath.Child("name"), o.Name, "pod host name "+host+": "+strings.Join(msgs, "; ")))
			}
		}
	}
	errs = append(errs, checkObjectMeta(acc, nameRule)...)
	errs = append(errs, metav1validation.ValidateLabels(tmplLabels, field.NewPath("spec", "template", "metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(tmplAnnotations, field.NewPath("spec", "template", "metadata", "annotations"))...)
	return errs
}

// templateMeta is the metadata of an object's pod template.
func templateMeta(obj runtime.Object) (*metav1.ObjectMeta, bool) {
	switch o := obj.(type) {
	case *batchv1.Job:
		return &o.Spec.Template.ObjectMeta, true
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.ObjectMeta, true
	case *appsv1.Deployment:
		return &o.Spec.Template.ObjectMeta, true
	case *appsv1.StatefulSet:
		return &o.Spec.Template.ObjectMeta, true
	case *appsv1.DaemonSet:
		return &o.Spec.Template.ObjectMeta, true
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.ObjectMeta, true
	}
	return nil, false
}

// checkObjectMeta applies the rules every object's metadata follows: a
// name (by the kind's rule), a namespace that is a DNS-1123 label, valid
// labels and annotations.
func checkObjectMeta(m metav1.Object, nameRule func(string) []string) field.ErrorList {
	var errs field.ErrorList
	metaPath := field.NewPath("metadata")
	if m.GetName() == "" {
		errs = append(errs, field.Required(metaPath.Child("name"), "every object needs a name"))
	} else if msgs := nameRule(m.GetName()); len(msgs) > 0 {
		errs = append(errs, field.Invalid(metaPath.Child("name"), m.GetName(), strings.Join(msgs, "; ")))
	}
	if ns := m.GetNamespace(); ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, field.Invalid(metaPath.Child("namespace"), ns, strings.Join(msgs, "; ")))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(m.GetLabels(), metaPath.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(m.GetAnnotations(), metaPath.Child("annotations"))...)
	return errs
}

// checkCustom checks an object of an API group trainsonnet has no types for
// (a custom resource, such as a Kubeflow MPIJob): the syntax of its
// apiVersion and kind, and its metadata, decoded strictly, by the rules of
// every object. The rest of it is the prototype's own business. A field of
// the wrong type in its metadata is an error; the rules it breaks come
// back as a list.
func checkCustom(gv schema.GroupVersion, kind string, raw []byte) (field.ErrorList, error) {
	var errs field.ErrorList
	if msgs := validation.IsDNS1123Subdomain(gv.Group); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), gv.String(), "the group: "+strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1035Label(gv.Version); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), gv.String(), "the version, such as v1 or v2beta1: "+strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1035Label(strings.ToLower(kind)); len(msgs) > 0 || !unicode.IsUpper(rune(kind[0])) {
		errs = append(errs, field.Invalid(field.NewPath("kind"), kind, "must be a CamelCase name such as MPIJob: a capital letter, then letters, digits and dashes"))
	}
	var obj struct {
		Metadata *metav1.ObjectMeta `json:"metadata"`
	}
	strict, err := sigsjson.UnmarshalStrict(raw, &obj)
	if err != nil {
		return nil, err // a field of the wrong type, named
	}
	var unknown []error
	for _, e := range strict {
		var fe sigsjson.FieldError
		if errors.As(e, &fe) && strings.HasPrefix(fe.FieldPath(), "metadata.") {
			unknown = append(unknown, e) // unknown field "metadata.nmae"
		}
	}
	if len(unknown) > 0 {
		return nil, utilerrors.NewAggregate(unknown)
	}
	if obj.Metadata == nil {
		errs = append(errs, field.Required(field.NewPath("metadata"), "every object needs metadata with a name"))
	} else {
		errs = append(errs, checkObjectMeta(obj.Metadata, validation.IsDNS1123Subdomain)...)
	}
	return errs, nil
}

// jobSetGroup is the API group of JobSet (sigs.k8s.io/jobset), whose
// replicated Jobs are batch/v1 Job templates.
const jobSetGroup = "jobset.x-k8s.io"

// checkJobSetJobs strictly decodes the Job template of each replicated Job
// of the JobSet m into batch/v1's JobTemplateSpec, as the API server's
// schema for JobSet holds them: a field of a Job or a pod that is
// misspelt, or of the wrong type, is the prototype's bug, named. (The pods
// get the pod check as every custom resource's do.)
func checkJobSetJobs(m map[string]any) error {
	spec, _ := m["spec"].(map[string]any)
	rjobs, _ := spec["replicatedJobs"].([]any)
	for i, rj := range rjobs {
		t, _ := rj.(map[string]any)
		raw, err := json.Marshal(t["template"])
		if err != nil {
			return err
		}
		var tmpl batchv1.JobTemplateSpec
		strict, err := sigsjson.UnmarshalStrict(raw, &tmpl)
		if err == nil && len(strict) > 0 {
			err = strict[0]
		}
		if err != nil {
			return fmt.Errorf("spec.replicatedJobs[%d].template: %w", i, err)
		}
	}
	return nil
}

// Problem is one rule a rendered object breaks.
type Problem struct {
	Object string // the object, as Object.ID
	Field  string // where in it: spec.template.spec.containers[0].image
	Rule   string // what is wrong, in words that follow "invalid value V: "
	Bug    string // what is wrong, said to the prototype's author ("": Rule)
	// At are the rendered values the problem is about, the likeliest
	// user's first: strings, numbers, or a map of labels or annotations.
	At []any
}

// String is the problem as a bug of the prototype proto.
func (pb Problem) String(proto string) string {
	if pb.Bug != "" {
		return fmt.Sprintf("%s: %s: %s: %s", proto, pb.Object, pb.Field, pb.Bug)
	}
	return fmt.Sprintf("%s: %s: %s: %s", proto, pb.Object, pb.Field, pb.Rule)
}

// dotted is path.key, or key at the top.
func dotted(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// An ownConfigMap is a ConfigMap of the job's own that a pod mounts: a
// volume named trainsonnet-* (the library's: the runtime's scripts, the
// hostfile, the ssh configuration), and the keys it takes of it.
type ownConfigMap struct {
	field, volume, name string
	keys                []string
}

func ownConfigMapsOf(p pod) []ownConfigMap {
	var out []ownConfigMap
	for i, v := range p.spec.Volumes {
		if !strings.HasPrefix(v.Name, "trainsonnet-") || v.ConfigMap == nil || v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
			continue
		}
		cm := ownConfigMap{field: fmt.Sprintf("%s.volumes[%d]", p.field, i), volume: v.Name, name: v.ConfigMap.Name}
		for _, it := range v.ConfigMap.Items {
			cm.keys = append(cm.keys, it.Key)
		}
		out = append(out, cm)
	}
	return out
}

// missingConfigMaps: a pod that mounts a ConfigMap of the job's own the
// render does not make (or without a key it takes) would wait in
// ContainerCreating on the cluster; it is the prototype's bug, said here.
func missingConfigMaps(proto string, objs []*Object) []string {
	made := map[string]map[string]any{}
	for _, o := range objs {
		if o.APIVersion != "v1" || o.Kind != "ConfigMap" {
			continue
		}
		keys := map[string]any{}
		if m, ok := o.Tree.(map[string]any); ok {
			for _, f := range []string{"data", "binaryData"} {
				d, _ := m[f].(map[string]any)
				for k := range d {
					keys[k] = nil
				}
			}
		}
		made[o.Namespace+"/"+o.Name] = keys
	}
	var errs []string
	missing := map[string]int{} // each missing ConfigMap said once: where first, and how many more
	first := map[string]string{}
	var order []string
	for _, o := range objs {
		for _, cm := range o.ownConfigMaps {
			id := o.Namespace + "/" + cm.name
			keys, ok := made[id]
			if !ok {
				if _, seen := first[id]; !seen {
					first[id] = fmt.Sprintf("%s: %s: %s: volume %s mounts ConfigMap %s", proto, o.ID(), cm.field, cm.volume, cm.name)
					order = append(order, id)
				} else {
					missing[id]++
				}
				continue
			}
			for _, k := range cm.keys {
				if _, ok := keys[k]; !ok {
					errs = append(errs, fmt.Sprintf("%s: %s: %s: volume %s takes key %s of ConfigMap %s, which has no such key", proto, o.ID(), cm.field, cm.volume, k, cm.name))
				}
			}
		}
	}
	for _, id := range order {
		more := ""
		if n := missing[id]; n > 0 {
			more = fmt.Sprintf(" (and %d more pod templates)", n)
		}
		errs = append(errs, first[id]+more+", which the render does not make: its pods would wait for it; emit it with the job (runtime.files, the hostfile, ... in its data)")
	}
	return errs
}

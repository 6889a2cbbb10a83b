package kubeflow

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Kinds are the objects Check knows, by "<apiVersion>/<kind>".
var Kinds = map[string]reflect.Type{
	"kubeflow.org/v1/PyTorchJob":  reflect.TypeFor[PyTorchJob](),
	"kubeflow.org/v1/TFJob":       reflect.TypeFor[TFJob](),
	"kubeflow.org/v2beta1/MPIJob": reflect.TypeFor[MPIJob](),
	TrainerVersion + "/TrainJob":  reflect.TypeFor[TrainJob](),
	// a runtime a TrainJob names: both kinds have its spec
	TrainerVersion + "/ClusterTrainingRuntime": reflect.TypeFor[TrainingRuntime](),
	TrainerVersion + "/TrainingRuntime":        reflect.TypeFor[TrainingRuntime](),
}

// Check checks obj, an object of kind ("<apiVersion>/<kind>"), against
// its API types and its operator's admission rules. It returns the object
// with its nulls removed, its extended resources' quantities as numbers
// (shape.go)
// and its containers' commands as the kubelet expanded them (expand.go),
// the problems found (the shape's first: its rules cannot be read on a
// malformed object; else the rules') and warnings. A kind it does not
// know is returned as it is.
func Check(kind string, obj map[string]any) (map[string]any, []Problem, []string) {
	t, ok := Kinds[kind]
	if !ok {
		return obj, nil, nil
	}
	w := &walker{}
	norm := w.object(obj, t, "")
	if len(w.problems) > 0 {
		return obj, w.problems, nil
	}
	b, err := json.Marshal(norm)
	if err != nil {
		return obj, []Problem{{Rule: "cannot be read: " + err.Error()}}, nil
	}
	r := &rules{}
	switch t {
	case reflect.TypeFor[PyTorchJob]():
		var j PyTorchJob
		if err := json.Unmarshal(b, &j); err != nil {
			return obj, []Problem{{Rule: "cannot be read: " + err.Error()}}, nil
		}
		r.pytorch(&j)
	case reflect.TypeFor[TFJob]():
		var j TFJob
		if err := json.Unmarshal(b, &j); err != nil {
			return obj, []Problem{{Rule: "cannot be read: " + err.Error()}}, nil
		}
		r.tf(&j)
	case reflect.TypeFor[MPIJob]():
		var j MPIJob
		if err := json.Unmarshal(b, &j); err != nil {
			return obj, []Problem{{Rule: "cannot be read: " + err.Error()}}, nil
		}
		r.mpi(&j)
	case reflect.TypeFor[TrainJob]():
		var j TrainJob
		if err := json.Unmarshal(b, &j); err != nil {
			return obj, []Problem{{Rule: "cannot be read: " + err.Error()}}, nil
		}
		r.trainJob(&j)
	case reflect.TypeFor[TrainingRuntime]():
		var rt TrainingRuntime
		if err := json.Unmarshal(b, &rt); err != nil {
			return obj, []Problem{{Rule: "cannot be read: " + err.Error()}}, nil
		}
		r.trainingRuntime(&rt)
	}
	var warnings []string
	if len(r.problems) == 0 {
		expandAll(kind, norm, "", &warnings)
	}
	return norm, r.problems, warnings
}

type rules struct {
	problems []Problem
}

func (r *rules) add(path string, v any, rule string) {
	shown := ""
	if v != nil {
		shown = param.Show(v)
	}
	r.problems = append(r.problems, Problem{Path: path, Value: shown, Rule: rule})
}

func (r *rules) oneOf(path, v string, valid ...string) {
	if v != "" && !slices.Contains(valid, v) {
		r.add(path, v, "must be one of "+strings.Join(valid, ", "))
	}
}

func (r *rules) atLeast(path string, v *int32, least int32) {
	if v != nil && *v < least {
		r.add(path, *v, "must be "+strconv.Itoa(int(least))+" or more")
	}
}

// runPolicy: what either operator refuses of a run policy (the MPI
// operator checks all of it; the values have no other meaning in the
// training operator either).
func (r *rules) runPolicy(rp *RunPolicy, managers ...string) {
	if rp == nil {
		return
	}
	at := "spec.runPolicy."
	if rp.CleanPodPolicy != nil {
		r.oneOf(at+"cleanPodPolicy", *rp.CleanPodPolicy, "All", "Running", "None")
	}
	r.atLeast(at+"ttlSecondsAfterFinished", rp.TTLSecondsAfterFinished, 0)
	r.atLeast(at+"backoffLimit", rp.BackoffLimit, 0)
	if rp.ActiveDeadlineSeconds != nil && *rp.ActiveDeadlineSeconds < 0 {
		r.add(at+"activeDeadlineSeconds", *rp.ActiveDeadlineSeconds, "must be 0 or more")
	}
	if rp.ManagedBy != nil {
		r.oneOf(at+"managedBy", *rp.ManagedBy, managers...)
	}
	if sp := rp.SchedulingPolicy; sp != nil {
		r.atLeast(at+"schedulingPolicy.minAvailable", sp.MinAvailable, 0)
		r.atLeast(at+"schedulingPolicy.scheduleTimeoutSeconds", sp.ScheduleTimeoutSeconds, 0)
	}
}

// name: the operators' rule for the job's name (their pods' and
// Services' names are built from it).
func (r *rules) name(name string) {
	if name == "" {
		return // the prototype's from function asks for one
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		r.add("metadata.name", name, "must be a DNS label that starts with a letter, as the operator takes it: "+errs[0])
	}
}

// replicaSpecs checks a job's roles: each has containers with images,
// one named container (the operator's default container) where the
// operator needs one, a known restart policy and no negative replicas.
func (r *rules) replicaSpecs(at string, specs map[string]*ReplicaSpec, container string) {
	for _, rt := range slices.Sorted(maps.Keys(specs)) {
		rs := specs[rt]
		rAt := at + "." + rt
		r.atLeast(rAt+".replicas", rs.Replicas, 0)
		r.oneOf(rAt+".restartPolicy", rs.RestartPolicy, "Always", "OnFailure", "Never", "ExitCode")
		cAt := rAt + ".template.spec.containers"
		named := container == ""
		for i, c := range rs.Template.Spec.Containers {
			if c.Image == "" {
				r.add(cAt+"["+strconv.Itoa(i)+"].image", nil, "required: the operator refuses a container without an image")
			}
			named = named || c.Name == container
			r.resources(cAt+"["+strconv.Itoa(i)+"].resources", c.Resources)
		}
		if len(rs.Template.Spec.Containers) == 0 {
			r.add(cAt, nil, "must have at least one container")
		} else if !named {
			r.add(cAt, nil, "must have a container named "+container+": the operator takes its command, resources and port from it")
		}
	}
}

// resources: the API's rule for extended resources (a GPU): a request
// only with the same limit (whole numbers: the shape's check).
func (r *rules) resources(at string, res corev1.ResourceRequirements) {
	for _, k := range slices.Sorted(maps.Keys(res.Requests)) {
		if !extended(k) {
			continue
		}
		q := res.Requests[k]
		l, has := res.Limits[k]
		switch {
		case !has:
			r.add(at+".requests."+string(k), q.String(), "needs the same limit: Kubernetes refuses a pod that requests "+string(k)+" without limits."+string(k)+" (set the limit; the request may then go)")
		case q.Cmp(l) != 0:
			r.add(at+".requests."+string(k), q.String(), "must equal limits."+string(k)+" ("+l.String()+"): Kubernetes refuses a pod whose "+string(k)+" request and limit differ")
		}
	}
}

func (r *rules) pytorch(j *PyTorchJob) {
	r.name(j.Metadata.Name)
	r.runPolicy(j.Spec.RunPolicy, "kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
	at := "spec.pytorchReplicaSpecs"
	specs := j.Spec.PyTorchReplicaSpecs
	for _, rt := range slices.Sorted(maps.Keys(specs)) {
		if rt != "Master" && rt != "Worker" {
			r.add(at+"."+rt, nil, "not a replica type of a PyTorchJob: it has Master and Worker")
		}
	}
	r.replicaSpecs(at, specs, "pytorch")
	if m := specs["Master"]; m != nil && m.Replicas != nil && *m.Replicas != 1 {
		r.add(at+".Master.replicas", *m.Replicas, "must be 1: a PyTorchJob has one Master (add the others to Worker)")
	}
	if w := specs["Worker"]; w != nil && w.Replicas != nil && *w.Replicas < 1 {
		r.add(at+".Worker.replicas", *w.Replicas, "must be 1 or more (leave Worker out for no workers)")
	}
	if ep := j.Spec.ElasticPolicy; ep != nil {
		if specs["Worker"] == nil {
			r.add(at+".Worker", nil, "required with spec.elasticPolicy: the elastic pods are workers")
		}
		if ep.NProcPerNode != nil && j.Spec.NprocPerNode != nil {
			r.add("spec.elasticPolicy.nProcPerNode", *ep.NProcPerNode, "must not be given with spec.nprocPerNode (it is the older spelling of it)")
		}
		r.atLeast("spec.elasticPolicy.minReplicas", ep.MinReplicas, 1)
		r.atLeast("spec.elasticPolicy.maxReplicas", ep.MaxReplicas, 1)
		r.atLeast("spec.elasticPolicy.maxRestarts", ep.MaxRestarts, 0)
		if ep.MinReplicas != nil && ep.MaxReplicas != nil && *ep.MinReplicas > *ep.MaxReplicas {
			r.add("spec.elasticPolicy.minReplicas", *ep.MinReplicas, "must be at most maxReplicas ("+strconv.Itoa(int(*ep.MaxReplicas))+")")
		}
	}
	if n := j.Spec.NprocPerNode; n != nil && *n != "auto" && *n != "cpu" && *n != "gpu" {
		if v, err := strconv.Atoi(*n); err != nil || v < 1 {
			r.add("spec.nprocPerNode", *n, "must be a number of processes (1 or more), auto, cpu or gpu")
		}
	}
}

func (r *rules) tf(j *TFJob) {
	r.name(j.Metadata.Name)
	r.runPolicy(j.Spec.RunPolicy, "kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
	if j.Spec.SuccessPolicy != nil {
		r.oneOf("spec.successPolicy", *j.Spec.SuccessPolicy, "AllWorkers")
	}
	r.replicaSpecs("spec.tfReplicaSpecs", j.Spec.TFReplicaSpecs, "tensorflow")
	if j.Spec.TFReplicaSpecs["Chief"] != nil && j.Spec.TFReplicaSpecs["Master"] != nil {
		r.add("spec.tfReplicaSpecs.Master", nil, "beside Chief: a TFJob has one chief (Master is its older name)")
	}
}

func (r *rules) mpi(j *MPIJob) {
	at := "spec.mpiReplicaSpecs"
	specs := j.Spec.MPIReplicaSpecs
	r.runPolicy(j.Spec.RunPolicy, "kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue")
	r.atLeast("spec.slotsPerWorker", j.Spec.SlotsPerWorker, 0)
	r.oneOf("spec.mpiImplementation", j.Spec.MPIImplementation, "OpenMPI", "Intel", "MPICH")
	r.oneOf("spec.launcherCreationPolicy", j.Spec.LauncherCreationPolicy, "AtStartup", "WaitForWorkersReady")
	r.replicaSpecs(at, specs, "")
	l := specs["Launcher"]
	switch {
	case l == nil:
		r.add(at+".Launcher", nil, "required: an MPIJob has a Launcher, which runs mpirun")
	case l.Replicas != nil && *l.Replicas != 1:
		r.add(at+".Launcher.replicas", *l.Replicas, "must be 1: an MPIJob has one launcher")
	}
	w := specs["Worker"]
	if w != nil && w.Replicas == nil {
		r.add(at+".Worker.replicas", nil, "required: the operator counts an MPIJob's workers from it (its default, 0, it refuses)")
	} else if w != nil && *w.Replicas < 1 {
		r.add(at+".Worker.replicas", *w.Replicas, "must be 1 or more")
	}
	if name := j.Metadata.Name; name != "" {
		n := int32(1)
		if w != nil && w.Replicas != nil && *w.Replicas > 0 {
			n = *w.Replicas
		}
		host := name + "-worker-" + strconv.Itoa(int(n-1))
		if errs := validation.IsDNS1035Label(host); len(errs) > 0 {
			r.add("metadata.name", name, "must make worker names that are DNS labels starting with a letter, as the operator takes it ("+host+": "+errs[0]+")")
		}
	}
}

// The Trainer's admission rules (its CRD's CEL rules and its webhook's)
// that a render can hold a file to; those that need the runtime (the
// reserved env of its framework, the replicated Jobs a patch names) are
// checked where the runtime is known (Runtime).
func (r *rules) trainJob(j *TrainJob) {
	if n := j.Metadata.Name; n != "" {
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			r.add("metadata.name", n, "must be a DNS label that starts with a letter, as the Trainer takes it: "+errs[0])
		}
	}
	ref := j.Spec.RuntimeRef
	if ref.APIGroup != nil {
		r.oneOf("spec.runtimeRef.apiGroup", *ref.APIGroup, trainerGroup)
	}
	if ref.Kind != nil {
		r.oneOf("spec.runtimeRef.kind", *ref.Kind, "ClusterTrainingRuntime", "TrainingRuntime")
	}
	if j.Spec.ManagedBy != nil {
		r.oneOf("spec.managedBy", *j.Spec.ManagedBy, "trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
	}
	if j.Spec.ActiveDeadlineSeconds != nil && *j.Spec.ActiveDeadlineSeconds < 1 {
		r.add("spec.activeDeadlineSeconds", *j.Spec.ActiveDeadlineSeconds, "must be 1 or more")
	}
	managers := map[string]bool{}
	for i, p := range j.Spec.RuntimePatches {
		at := "spec.runtimePatches[" + strconv.Itoa(i) + "].manager"
		if errs := validation.IsDomainPrefixedPath(field.NewPath(at), p.Manager); len(errs) > 0 {
			r.add(at, p.Manager, errs[0].Detail+", as the Trainer takes it")
		}
		if managers[p.Manager] {
			r.add(at, p.Manager, "is given twice: a manager has one patch")
		}
		managers[p.Manager] = true
	}
	if len(j.Spec.RuntimePatches) > 0 && len(j.Spec.PodTemplateOverrides) > 0 {
		r.add("spec.podTemplateOverrides", nil, "must not be given with spec.runtimePatches: the first is the Trainer v2.1's, the second v2.2's and later; write one")
	}
	if t := j.Spec.Trainer; t != nil {
		r.atLeast("spec.trainer.numNodes", t.NumNodes, 1)
		if n := t.NumProcPerNode; n != nil {
			if n.Type == intstr.Int && n.IntVal < 1 {
				r.add("spec.trainer.numProcPerNode", n.IntVal, "must be 1 or more")
			} else if n.Type == intstr.String && n.StrVal != "auto" && n.StrVal != "cpu" && n.StrVal != "gpu" {
				r.add("spec.trainer.numProcPerNode", n.StrVal, "must be a number of processes (1 or more), or (in the Trainer v2.1) auto, cpu or gpu")
			}
		}
		if t.ResourcesPerNode != nil {
			r.resources("spec.trainer.resourcesPerNode", *t.ResourcesPerNode)
		}
	}
}

// trainingRuntime: what the Trainer's webhook refuses of a runtime, and
// what trainsonnet needs to read one: replicated Jobs with unique names, a
// policy of one framework.
func (r *rules) trainingRuntime(rt *TrainingRuntime) {
	if rt.Metadata.Name == "" {
		r.add("metadata.name", nil, "required: a TrainJob names its runtime")
	}
	seen := map[string]bool{}
	for i, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		at := "spec.template.spec.replicatedJobs[" + strconv.Itoa(i) + "]"
		if seen[rj.Name] {
			r.add(at+".name", rj.Name, "must be unique: a JobSet's replicated Jobs have a name each")
		}
		seen[rj.Name] = true
		if len(rj.Template.Spec.Template.Spec.Containers) == 0 {
			r.add(at+".template.spec.template.spec.containers", nil, "must have at least one container")
		}
	}
	if p := rt.Spec.MLPolicy; p != nil {
		n := 0
		for _, set := range []bool{p.Torch != nil, p.MPI != nil, p.JAX != nil, p.XGBoost != nil, p.Flux != nil} {
			if set {
				n++
			}
		}
		if n > 1 {
			r.add("spec.mlPolicy", nil, "must have one framework at most (torch, mpi, jax, xgboost or flux)")
		}
		r.atLeast("spec.mlPolicy.numNodes", p.NumNodes, 1)
		if p.MPI != nil {
			r.atLeast("spec.mlPolicy.mpi.numProcPerNode", p.MPI.NumProcPerNode, 1)
			if p.MPI.MPIImplementation != nil {
				r.oneOf("spec.mlPolicy.mpi.mpiImplementation", *p.MPI.MPIImplementation, "OpenMPI", "Intel", "MPICH")
			}
		}
	}
}

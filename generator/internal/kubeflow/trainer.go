package kubeflow

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// trainerGroup is the Trainer's API group; TrainerVersion its version.
const (
	trainerGroup   = "trainer.kubeflow.org"
	TrainerVersion = trainerGroup + "/v1alpha1"
	// TrainJobKind is the kind of a TrainJob.
	TrainJobKind = TrainerVersion + "/TrainJob"
)

// The Kubeflow Trainer v2's API, trainer.kubeflow.org/v1alpha1, as its
// JSON reads, in both of the shapes it has had under that one version:
// v2.1's (podTemplateOverrides, spec.labels and spec.annotations, a
// numProcPerNode of a number or text) and v2.2's and later
// (runtimePatches, activeDeadlineSeconds; numProcPerNode a number). A
// user's file of either is read; mirrored from trainer/v2 v2.1.0 and
// v2.3.0 (pkg/apis/trainer/v1alpha1) for the reason the operators' types
// are (types.go).

// TrainJob is a TrainJob: a job on a runtime it names.
type TrainJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec       TrainJobSpec      `json:"spec"`
	Status     any               `json:"status,omitempty"`
}

// TrainJobSpec is its spec.
type TrainJobSpec struct {
	RuntimeRef  RuntimeRef   `json:"runtimeRef"`
	Initializer *Initializer `json:"initializer,omitempty"`
	Trainer     *Trainer     `json:"trainer,omitempty"`
	// v2.2 and later
	RuntimePatches        []RuntimePatch `json:"runtimePatches,omitempty"`
	ActiveDeadlineSeconds *int64         `json:"activeDeadlineSeconds,omitempty"`
	// v2.1
	Labels               map[string]string     `json:"labels,omitempty"`
	Annotations          map[string]string     `json:"annotations,omitempty"`
	PodTemplateOverrides []PodTemplateOverride `json:"podTemplateOverrides,omitempty"`

	Suspend   *bool   `json:"suspend,omitempty"`
	ManagedBy *string `json:"managedBy,omitempty"`
}

// RuntimeRef names the runtime.
type RuntimeRef struct {
	Name     string  `json:"name"`
	APIGroup *string `json:"apiGroup,omitempty"`
	Kind     *string `json:"kind,omitempty"`
}

// Initializer is the dataset and model initializers' settings.
type Initializer struct {
	Dataset any `json:"dataset,omitempty"`
	Model   any `json:"model,omitempty"`
}

// Trainer is what a TrainJob overrides of its runtime's trainer.
type Trainer struct {
	Image            *string                      `json:"image,omitempty"`
	Command          []string                     `json:"command,omitempty"`
	Args             []string                     `json:"args,omitempty"`
	Env              []corev1.EnvVar              `json:"env,omitempty"`
	NumNodes         *int32                       `json:"numNodes,omitempty"`
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`
	// a number, or (v2.1) auto, cpu or gpu
	NumProcPerNode *intstr.IntOrString `json:"numProcPerNode,omitempty"`
}

// RuntimePatch is one manager's patch of the runtime (v2.2 and later).
type RuntimePatch struct {
	Manager             string                    `json:"manager"`
	Time                *metav1.Time              `json:"time,omitempty"`
	TrainingRuntimeSpec *TrainingRuntimeSpecPatch `json:"trainingRuntimeSpec,omitempty"`
}

// TrainingRuntimeSpecPatch is what a runtime patch may change.
type TrainingRuntimeSpecPatch struct {
	Template *JobSetTemplatePatch `json:"template,omitempty"`
}

// JobSetTemplatePatch is its JobSet's part.
type JobSetTemplatePatch struct {
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     *JobSetSpecPatch   `json:"spec,omitempty"`
}

// JobSetSpecPatch patches replicated Jobs by name.
type JobSetSpecPatch struct {
	ReplicatedJobs []ReplicatedJobPatch `json:"replicatedJobs,omitempty"`
}

// ReplicatedJobPatch is one replicated Job's patch.
type ReplicatedJobPatch struct {
	Name     string            `json:"name"`
	Template *JobTemplatePatch `json:"template,omitempty"`
}

// JobTemplatePatch is its Job's part.
type JobTemplatePatch struct {
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     *JobSpecPatch      `json:"spec,omitempty"`
}

// JobSpecPatch is its pod template's part.
type JobSpecPatch struct {
	Template *PodTemplatePatch `json:"template,omitempty"`
}

// PodTemplatePatch is the pod template's patch.
type PodTemplatePatch struct {
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     *PodSpecPatch      `json:"spec,omitempty"`
}

// PodSpecPatch is what a patch or an override may set of the pods.
type PodSpecPatch struct {
	ServiceAccountName            *string                       `json:"serviceAccountName,omitempty"`
	Volumes                       []corev1.Volume               `json:"volumes,omitempty"`
	InitContainers                []ContainerPatch              `json:"initContainers,omitempty"`
	Containers                    []ContainerPatch              `json:"containers,omitempty"`
	ImagePullSecrets              []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	SecurityContext               *corev1.PodSecurityContext    `json:"securityContext,omitempty"`
	NodeSelector                  map[string]string             `json:"nodeSelector,omitempty"`
	Affinity                      *corev1.Affinity              `json:"affinity,omitempty"`
	Tolerations                   []corev1.Toleration           `json:"tolerations,omitempty"`
	SchedulingGates               []corev1.PodSchedulingGate    `json:"schedulingGates,omitempty"`
	TerminationGracePeriodSeconds *int64                        `json:"terminationGracePeriodSeconds,omitempty"`
}

// ContainerPatch is what a patch may set of a container.
type ContainerPatch struct {
	Name            string                  `json:"name"`
	Env             []corev1.EnvVar         `json:"env,omitempty"`
	VolumeMounts    []corev1.VolumeMount    `json:"volumeMounts,omitempty"`
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// PodTemplateOverride is v2.1's override of the pods of some replicated
// Jobs.
type PodTemplateOverride struct {
	TargetJobs []PodTemplateOverrideTargetJob `json:"targetJobs"`
	Metadata   *metav1.ObjectMeta             `json:"metadata,omitempty"`
	Spec       *PodSpecPatch                  `json:"spec,omitempty"`
}

// PodTemplateOverrideTargetJob names a replicated Job.
type PodTemplateOverrideTargetJob struct {
	Name string `json:"name"`
}

// TrainingRuntime is a ClusterTrainingRuntime or a (namespaced)
// TrainingRuntime: the same spec.
type TrainingRuntime struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Metadata   metav1.ObjectMeta   `json:"metadata,omitempty"`
	Spec       TrainingRuntimeSpec `json:"spec"`
}

// TrainingRuntimeSpec is a runtime: a policy and a JobSet's template.
type TrainingRuntimeSpec struct {
	MLPolicy       *MLPolicy          `json:"mlPolicy,omitempty"`
	PodGroupPolicy any                `json:"podGroupPolicy,omitempty"`
	Template       JobSetTemplateSpec `json:"template"`
}

// MLPolicy is the framework's policy: one source at most.
type MLPolicy struct {
	NumNodes *int32       `json:"numNodes,omitempty"`
	Torch    *TorchPolicy `json:"torch,omitempty"`
	MPI      *MPIPolicy   `json:"mpi,omitempty"`
	JAX      *struct{}    `json:"jax,omitempty"`
	XGBoost  *struct{}    `json:"xgboost,omitempty"`
	Flux     any          `json:"flux,omitempty"`
}

// TorchPolicy is the torch source: v2.1's numProcPerNode and
// elasticPolicy, v2.3's envInjection.
type TorchPolicy struct {
	NumProcPerNode *intstr.IntOrString `json:"numProcPerNode,omitempty"`
	ElasticPolicy  any                 `json:"elasticPolicy,omitempty"`
	EnvInjection   any                 `json:"envInjection,omitempty"`
}

// MPIPolicy is the mpi source.
type MPIPolicy struct {
	NumProcPerNode    *int32  `json:"numProcPerNode,omitempty"`
	MPIImplementation *string `json:"mpiImplementation,omitempty"`
	SSHAuthMountPath  *string `json:"sshAuthMountPath,omitempty"`
	RunLauncherAsNode *bool   `json:"runLauncherAsNode,omitempty"`
}

// JobSetTemplateSpec is the runtime's JobSet.
type JobSetTemplateSpec struct {
	Metadata metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     JobSetSpec        `json:"spec"`
}

// JobSetSpec is what a runtime's JobSet holds (jobset.x-k8s.io/v1alpha2):
// its replicated Jobs, typed; its policies, as any (the Trainer's JobSet
// takes them, trainsonnet reads none).
type JobSetSpec struct {
	ReplicatedJobs          []ReplicatedJob `json:"replicatedJobs"`
	Network                 any             `json:"network,omitempty"`
	SuccessPolicy           any             `json:"successPolicy,omitempty"`
	FailurePolicy           any             `json:"failurePolicy,omitempty"`
	StartupPolicy           any             `json:"startupPolicy,omitempty"`
	Coordinator             any             `json:"coordinator,omitempty"`
	Suspend                 *bool           `json:"suspend,omitempty"`
	ManagedBy               *string         `json:"managedBy,omitempty"`
	TTLSecondsAfterFinished *int32          `json:"ttlSecondsAfterFinished,omitempty"`
}

// ReplicatedJob is one replicated Job of the runtime's JobSet.
type ReplicatedJob struct {
	Name      string                  `json:"name"`
	GroupName string                  `json:"groupName,omitempty"`
	Replicas  *int32                  `json:"replicas,omitempty"`
	DependsOn []DependsOn             `json:"dependsOn,omitempty"`
	Template  batchv1.JobTemplateSpec `json:"template"`
}

// DependsOn orders replicated Jobs.
type DependsOn struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

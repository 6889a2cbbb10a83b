package kubeflow

import (
	"reflect"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The operators' API types, as their JSON reads: the fields and their Go
// types of kubeflow.org/v1 (training-operator v1.9.3:
// pkg/apis/kubeflow.org/v1) and kubeflow.org/v2beta1 (mpi-operator v0.8.0:
// pkg/apis/kubeflow/v2beta1). Mirrored rather than imported: the
// operators' modules would bring a controller's dependencies into every
// program that imports generator. A field is required where it has no
// omitempty and is not a pointer (the API conventions); the operators'
// own tags mark some fields required that their CRDs do not (runPolicy),
// which are optional here, as the CRDs have them. The pod template is
// k8s.io/api's own.

// PyTorchJob is kubeflow.org/v1 PyTorchJob.
type PyTorchJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec       PyTorchJobSpec    `json:"spec"`
	Status     any               `json:"status,omitempty"`
}

// PyTorchJobSpec is its spec.
type PyTorchJobSpec struct {
	RunPolicy           *RunPolicy              `json:"runPolicy,omitempty"`
	ElasticPolicy       *ElasticPolicy          `json:"elasticPolicy,omitempty"`
	PyTorchReplicaSpecs map[string]*ReplicaSpec `json:"pytorchReplicaSpecs"`
	NprocPerNode        *string                 `json:"nprocPerNode,omitempty"`
}

// ElasticPolicy is a PyTorchJob's elasticPolicy.
type ElasticPolicy struct {
	MinReplicas  *int32                     `json:"minReplicas,omitempty"`
	MaxReplicas  *int32                     `json:"maxReplicas,omitempty"`
	RDZVBackend  *string                    `json:"rdzvBackend,omitempty"`
	RDZVPort     *int32                     `json:"rdzvPort,omitempty"`
	RDZVHost     *string                    `json:"rdzvHost,omitempty"`
	RDZVID       *string                    `json:"rdzvId,omitempty"`
	RDZVConf     []RDZVConf                 `json:"rdzvConf,omitempty"`
	Standalone   *bool                      `json:"standalone,omitempty"`
	NProcPerNode *int32                     `json:"nProcPerNode,omitempty"`
	MaxRestarts  *int32                     `json:"maxRestarts,omitempty"`
	Metrics      []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
}

// RDZVConf is one rendezvous setting.
type RDZVConf struct {
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
}

// TFJob is kubeflow.org/v1 TFJob.
type TFJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec       TFJobSpec         `json:"spec"`
	Status     any               `json:"status,omitempty"`
}

// TFJobSpec is its spec.
type TFJobSpec struct {
	RunPolicy           *RunPolicy              `json:"runPolicy,omitempty"`
	SuccessPolicy       *string                 `json:"successPolicy,omitempty"`
	TFReplicaSpecs      map[string]*ReplicaSpec `json:"tfReplicaSpecs"`
	EnableDynamicWorker bool                    `json:"enableDynamicWorker,omitempty"`
}

// MPIJob is kubeflow.org/v2beta1 MPIJob.
type MPIJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec       MPIJobSpec        `json:"spec"`
	Status     any               `json:"status,omitempty"`
}

// MPIJobSpec is its spec.
type MPIJobSpec struct {
	SlotsPerWorker         *int32                  `json:"slotsPerWorker,omitempty"`
	RunLauncherAsWorker    *bool                   `json:"runLauncherAsWorker,omitempty"`
	RunPolicy              *RunPolicy              `json:"runPolicy,omitempty"`
	MPIReplicaSpecs        map[string]*ReplicaSpec `json:"mpiReplicaSpecs"`
	SSHAuthMountPath       string                  `json:"sshAuthMountPath,omitempty"`
	LauncherCreationPolicy string                  `json:"launcherCreationPolicy,omitempty"`
	MPIImplementation      string                  `json:"mpiImplementation,omitempty"`
}

// ReplicaSpec is a role's pods, in both API versions.
type ReplicaSpec struct {
	Replicas *int32 `json:"replicas,omitempty"`
	// Template is required here: both operators refuse a role without
	// containers.
	Template      PodTemplateSpec `json:"template"`
	RestartPolicy string          `json:"restartPolicy,omitempty"`
}

// PodTemplateSpec is corev1's, with its spec required (the operators
// refuse a role without containers).
type PodTemplateSpec struct {
	Metadata metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     corev1.PodSpec    `json:"spec"`
}

// RunPolicy is the job's lifetime, in both API versions.
type RunPolicy struct {
	CleanPodPolicy          *string           `json:"cleanPodPolicy,omitempty"`
	TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished,omitempty"`
	ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32            `json:"backoffLimit,omitempty"`
	SchedulingPolicy        *SchedulingPolicy `json:"schedulingPolicy,omitempty"`
	Suspend                 *bool             `json:"suspend,omitempty"`
	ManagedBy               *string           `json:"managedBy,omitempty"`
}

// SchedulingPolicy is a gang scheduler's settings.
type SchedulingPolicy struct {
	MinAvailable           *int32              `json:"minAvailable,omitempty"`
	Queue                  string              `json:"queue,omitempty"`
	MinResources           corev1.ResourceList `json:"minResources,omitempty"`
	PriorityClass          string              `json:"priorityClass,omitempty"`
	ScheduleTimeoutSeconds *int32              `json:"scheduleTimeoutSeconds,omitempty"`
}

// typeNames: the names messages give types whose Go name differs from
// the API's.
var typeNames = map[reflect.Type]string{
	reflect.TypeFor[PyTorchJob]():        "PyTorchJob",
	reflect.TypeFor[TFJob]():             "TFJob",
	reflect.TypeFor[MPIJob]():            "MPIJob",
	reflect.TypeFor[metav1.ObjectMeta](): "ObjectMeta",
}

package param

import (
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// objectKinds maps the k8s.io/api types an object parameter may name to
// their Go types. A value is strictly decoded into the type: an unknown or
// mistyped field is an error naming the field.
var objectKinds = map[string]reflect.Type{
	"core/v1.Affinity":                  reflect.TypeFor[corev1.Affinity](),
	"core/v1.Container":                 reflect.TypeFor[corev1.Container](),
	"core/v1.EnvVar":                    reflect.TypeFor[corev1.EnvVar](),
	"core/v1.EnvFromSource":             reflect.TypeFor[corev1.EnvFromSource](),
	"core/v1.LocalObjectReference":      reflect.TypeFor[corev1.LocalObjectReference](),
	"core/v1.PodSecurityContext":        reflect.TypeFor[corev1.PodSecurityContext](),
	"core/v1.ResourceRequirements":      reflect.TypeFor[corev1.ResourceRequirements](),
	"core/v1.SecurityContext":           reflect.TypeFor[corev1.SecurityContext](),
	"core/v1.Toleration":                reflect.TypeFor[corev1.Toleration](),
	"core/v1.TopologySpreadConstraint":  reflect.TypeFor[corev1.TopologySpreadConstraint](),
	"core/v1.Volume":                    reflect.TypeFor[corev1.Volume](),
	"core/v1.VolumeMount":               reflect.TypeFor[corev1.VolumeMount](),
	"core/v1.PersistentVolumeClaimSpec": reflect.TypeFor[corev1.PersistentVolumeClaimSpec](),
	"networking/v1.NetworkPolicyPeer":   reflect.TypeFor[networkingv1.NetworkPolicyPeer](),
}

func objectKindNames() []string { return slices.Sorted(maps.Keys(objectKinds)) }

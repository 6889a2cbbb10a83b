package param

import (
	"net"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkObject applies the few semantic rules of pass-through objects that a
// typed decode cannot see and that users get wrong most: names and paths.
func checkObject(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		seen := map[string]bool{}
		for i := 0; i < rv.Len(); i++ {
			item := rv.Index(i).Interface()
			if rule := checkObject(item); rule != "" {
				return "item " + strconv.Itoa(i) + ": " + rule
			}
			if vol, ok := item.(corev1.Volume); ok {
				if seen[vol.Name] {
					return "volume name \"" + vol.Name + "\" is used twice"
				}
				seen[vol.Name] = true
			}
		}
		return ""
	}
	switch o := v.(type) {
	case corev1.Volume:
		if msgs := validation.IsDNS1123Label(o.Name); len(msgs) > 0 {
			return "volume name \"" + o.Name + "\": " + strings.Join(msgs, "; ")
		}
		return checkVolumeSource(o)
	case corev1.VolumeMount:
		if msgs := validation.IsDNS1123Label(o.Name); len(msgs) > 0 {
			return "volume mount name \"" + o.Name + "\": " + strings.Join(msgs, "; ")
		}
		if !strings.HasPrefix(o.MountPath, "/") {
			return "volume mount \"" + o.Name + "\": mountPath must be an absolute path"
		}
	case corev1.Toleration:
		return checkToleration(o)
	case networkingv1.NetworkPolicyPeer:
		return checkPeer(o)
	case corev1.EnvVar:
		if msgs := validation.IsEnvVarName(o.Name); len(msgs) > 0 {
			return "env name \"" + o.Name + "\": " + strings.Join(msgs, "; ")
		}
	}
	return ""
}

// checkToleration applies the API server's rules for a toleration.
func checkToleration(t corev1.Toleration) string {
	if t.Key != "" {
		if msgs := content.IsLabelKey(t.Key); len(msgs) > 0 {
			return "toleration key \"" + t.Key + "\": " + strings.Join(msgs, "; ")
		}
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return "toleration of \"" + t.Key + "\": value must be empty when operator is Exists"
		}
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			return "a toleration without a key must have operator Exists"
		}
		if msgs := content.IsLabelValue(t.Value); len(msgs) > 0 {
			return "toleration of \"" + t.Key + "\": value: " + strings.Join(msgs, "; ")
		}
	default:
		return "toleration of \"" + t.Key + "\": operator must be Exists or Equal, not \"" + string(t.Operator) + "\""
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return "toleration of \"" + t.Key + "\": effect must be NoSchedule, PreferNoSchedule or NoExecute, not \"" + string(t.Effect) + "\""
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		return "toleration of \"" + t.Key + "\": tolerationSeconds needs effect NoExecute"
	}
	return ""
}

// checkPeer applies the API server's rules for a NetworkPolicy peer: an
// ipBlock alone, or pod and namespace selectors.
func checkPeer(p networkingv1.NetworkPolicyPeer) string {
	if p.IPBlock == nil {
		if p.PodSelector == nil && p.NamespaceSelector == nil {
			return "a peer needs podSelector, namespaceSelector or ipBlock"
		}
		for _, s := range []struct {
			what string
			sel  *metav1.LabelSelector
		}{{"podSelector", p.PodSelector}, {"namespaceSelector", p.NamespaceSelector}} {
			if errs := metav1validation.ValidateLabelSelector(s.sel, metav1validation.LabelSelectorValidationOptions{}, field.NewPath(s.what)); len(errs) > 0 {
				return errs.ToAggregate().Error()
			}
		}
		return ""
	}
	if p.PodSelector != nil || p.NamespaceSelector != nil {
		return "a peer with ipBlock must not have podSelector or namespaceSelector"
	}
	_, cidr, err := net.ParseCIDR(p.IPBlock.CIDR)
	if err != nil || cidr.String() != p.IPBlock.CIDR {
		return "ipBlock.cidr " + strconv.Quote(p.IPBlock.CIDR) + " must be a CIDR such as 10.0.0.0/8, with no bits set after the prefix"
	}
	for _, e := range p.IPBlock.Except {
		ip, ex, err := net.ParseCIDR(e)
		if err != nil || ex.String() != e {
			return "ipBlock.except " + strconv.Quote(e) + " must be a CIDR such as 10.1.0.0/16"
		}
		exOnes, _ := ex.Mask.Size()
		ones, _ := cidr.Mask.Size()
		if !cidr.Contains(ip) || exOnes <= ones {
			return "ipBlock.except " + strconv.Quote(e) + " must be a strict subset of ipBlock.cidr " + p.IPBlock.CIDR
		}
	}
	return ""
}

// checkVolumeSource applies the API server's rules for a volume's source:
// exactly one, with the fields that name what it mounts.
func checkVolumeSource(v corev1.Volume) string {
	src := reflect.ValueOf(v.VolumeSource)
	var kinds []string
	for i := 0; i < src.NumField(); i++ {
		if !src.Field(i).IsNil() {
			name, _, _ := strings.Cut(src.Type().Field(i).Tag.Get("json"), ",")
			kinds = append(kinds, name)
		}
	}
	what := "volume \"" + v.Name + "\""
	switch {
	case len(kinds) == 0:
		return what + " needs a source (emptyDir, persistentVolumeClaim, configMap, secret, nfs, csi, ...)"
	case len(kinds) > 1:
		return what + " must have one source, not " + strings.Join(kinds, " and ")
	}
	missing := func(field string) string { return what + ": " + kinds[0] + "." + field + " is required" }
	switch s := v.VolumeSource; {
	case s.PersistentVolumeClaim != nil && s.PersistentVolumeClaim.ClaimName == "":
		return missing("claimName")
	case s.Secret != nil && s.Secret.SecretName == "":
		return missing("secretName")
	case s.ConfigMap != nil && s.ConfigMap.Name == "":
		return missing("name")
	case s.HostPath != nil && s.HostPath.Path == "":
		return missing("path")
	case s.NFS != nil && (s.NFS.Server == "" || s.NFS.Path == ""):
		return what + ": nfs.server and nfs.path are required"
	case s.CSI != nil && s.CSI.Driver == "":
		return missing("driver")
	case s.Ephemeral != nil && s.Ephemeral.VolumeClaimTemplate == nil:
		return missing("volumeClaimTemplate")
	}
	return ""
}

package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

// podSecurityLevel returns the strictest Pod Security Standard level
// (restricted, baseline or privileged) that every pod template in objs
// passes, and for each level it fails, why. It follows the Pod Security
// Standards (https://kubernetes.io/docs/concepts/security/pod-security-standards/)
// for the fields trainsonnet's prototypes can produce; it is no
// replacement for the API server, which checks the same manifests in a
// namespace enforcing the returned level (and the suite treats its warnings
// as errors), so a level here that is too lenient fails the suite.
func podSecurityLevel(objs []map[string]any) (kube.PodSecurityLevel, map[kube.PodSecurityLevel][]string) {
	why := map[kube.PodSecurityLevel][]string{}
	for _, o := range objs {
		for _, ps := range podSpecsOf(o) {
			where := fmt.Sprintf("%v %v: ", o["kind"], nested(o, "metadata", "name"))
			b, r := checkPodSpec(ps.spec, ps.path)
			for _, s := range b {
				why[kube.Baseline] = append(why[kube.Baseline], where+s)
			}
			for _, s := range r {
				why[kube.Restricted] = append(why[kube.Restricted], where+s)
			}
		}
	}
	switch {
	case len(why[kube.Baseline]) > 0:
		return kube.Privileged, why
	case len(why[kube.Restricted]) > 0:
		return kube.Baseline, why
	}
	return kube.Restricted, why
}

// podSpec is a pod spec and where it sits in its object.
type podSpec struct {
	spec map[string]any
	path string
}

// podSpecsOf returns the pod spec of a Pod or of a workload's pod
// template, or those of a JobSet's replicated Jobs.
func podSpecsOf(o map[string]any) []podSpec {
	one := func(spec map[string]any, path string) []podSpec {
		if spec == nil {
			return nil
		}
		return []podSpec{{spec, path}}
	}
	switch o["kind"] {
	case "Pod":
		return one(asMap(o["spec"]), "spec")
	case "Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController":
		return one(asMap(nested(o, "spec", "template", "spec")), "spec.template.spec")
	case "CronJob":
		return one(asMap(nested(o, "spec", "jobTemplate", "spec", "template", "spec")), "spec.jobTemplate.spec.template.spec")
	case "JobSet":
		var out []podSpec
		for i, rj := range asList(nested(o, "spec", "replicatedJobs")) {
			out = append(out, one(asMap(nested(rj, "template", "spec", "template", "spec")),
				fmt.Sprintf("spec.replicatedJobs[%d].template.spec.template.spec", i))...)
		}
		return out
	}
	return nil
}

// Capabilities a baseline container may add, and the volume types a
// restricted pod may use.
var (
	baselineCapabilities = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
		"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
	restrictedVolumes = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
		"persistentVolumeClaim", "projected", "secret"}
)

// checkPodSpec lists what breaks the baseline level and what (beyond that)
// breaks the restricted level.
func checkPodSpec(spec map[string]any, path string) (baseline, restricted []string) {
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if spec[f] == true {
			baseline = append(baseline, path+"."+f+"=true")
		}
	}
	podSC := asMap(spec["securityContext"])
	if t := nested(podSC, "seccompProfile", "type"); t == "Unconfined" {
		baseline = append(baseline, path+".securityContext.seccompProfile.type=Unconfined")
	}
	for _, v := range asList(spec["volumes"]) {
		vol := asMap(v)
		for typ := range vol {
			if typ == "name" {
				continue
			}
			if typ == "hostPath" {
				baseline = append(baseline, fmt.Sprintf("%s.volumes[%v]: hostPath", path, vol["name"]))
			} else if !slices.Contains(restrictedVolumes, typ) {
				restricted = append(restricted, fmt.Sprintf("%s.volumes[%v]: volume type %s", path, vol["name"], typ))
			}
		}
	}
	podNonRoot := nested(podSC, "runAsNonRoot") == true
	podSeccomp := nested(podSC, "seccompProfile", "type")
	if isZero(nested(podSC, "runAsUser")) {
		restricted = append(restricted, path+".securityContext.runAsUser=0")
	}
	for _, kind := range []string{"initContainers", "containers", "ephemeralContainers"} {
		for _, c := range asList(spec[kind]) {
			cm := asMap(c)
			at := fmt.Sprintf("%s.%s[%v]", path, kind, cm["name"])
			sc := asMap(cm["securityContext"])
			if sc["privileged"] == true {
				baseline = append(baseline, at+": privileged")
			}
			if t := nested(sc, "seccompProfile", "type"); t == "Unconfined" {
				baseline = append(baseline, at+": seccompProfile Unconfined")
			}
			for _, p := range asList(cm["ports"]) {
				if hp, ok := asMap(p)["hostPort"]; ok && !isZero(hp) {
					baseline = append(baseline, fmt.Sprintf("%s: hostPort %v", at, hp))
				}
			}
			var adds []string
			for _, a := range asList(nested(sc, "capabilities", "add")) {
				adds = append(adds, fmt.Sprint(a))
			}
			for _, a := range adds {
				if !slices.Contains(baselineCapabilities, a) {
					baseline = append(baseline, at+": adds capability "+a)
				}
				if a != "NET_BIND_SERVICE" {
					restricted = append(restricted, at+": adds capability "+a)
				}
			}
			var drops []string
			for _, d := range asList(nested(sc, "capabilities", "drop")) {
				drops = append(drops, fmt.Sprint(d))
			}
			if !slices.Contains(drops, "ALL") {
				restricted = append(restricted, at+": does not drop ALL capabilities")
			}
			if sc["allowPrivilegeEscalation"] != false {
				restricted = append(restricted, at+": allowPrivilegeEscalation is not false")
			}
			nonRoot, set := sc["runAsNonRoot"]
			if nonRoot == false || (!set && !podNonRoot) {
				restricted = append(restricted, at+": runAsNonRoot is not true")
			}
			if isZero(sc["runAsUser"]) {
				restricted = append(restricted, at+": runAsUser=0")
			}
			if t := nested(sc, "seccompProfile", "type"); t == nil && podSeccomp != "RuntimeDefault" && podSeccomp != "Localhost" {
				restricted = append(restricted, at+": no RuntimeDefault or Localhost seccompProfile")
			} else if t != nil && t != "RuntimeDefault" && t != "Localhost" {
				restricted = append(restricted, fmt.Sprintf("%s: seccompProfile %v", at, t))
			}
		}
	}
	return baseline, restricted
}

// stricter returns the next stricter level, or "" for restricted.
func stricter(l kube.PodSecurityLevel) kube.PodSecurityLevel {
	switch l {
	case kube.Privileged:
		return kube.Baseline
	case kube.Baseline:
		return kube.Restricted
	}
	return ""
}

func nested(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// isZero reports whether a decoded JSON/YAML number is 0 (nil is not).
func isZero(v any) bool {
	if v == nil {
		return false
	}
	return fmt.Sprint(v) == "0"
}

// levelReasons formats why a level was not reached, for messages.
func levelReasons(why map[kube.PodSecurityLevel][]string, l kube.PodSecurityLevel) string {
	r := slices.Clone(why[l])
	sort.Strings(r)
	r = slices.Compact(r)
	if len(r) > 6 {
		r = append(r[:6], fmt.Sprintf("... and %d more", len(r)-6))
	}
	return strings.Join(r, "; ")
}

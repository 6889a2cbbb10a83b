package generator

import (
	"encoding/base64"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A format checks a string value and returns the rule it breaks, or "".
type format struct {
	rule  string // what the value must be, for describe and the JSON Schema
	check func(string) string
}

// formats are the named string checks a declaration can ask for. Checks come
// from k8s.io/apimachinery where Kubernetes has them, so our rules are the
// API server's rules.
var formats = map[string]format{
	"": {rule: "any text", check: func(string) string { return "" }},
	"nonEmpty": {rule: "any non-empty text", check: func(s string) string {
		if strings.TrimSpace(s) == "" {
			return "must not be empty"
		}
		return ""
	}},
	"dns1035Label": {rule: "a DNS-1035 label", check: joinMsgs(validation.IsDNS1035Label)},
	"dns1123Label": {rule: "a DNS-1123 label", check: joinMsgs(validation.IsDNS1123Label)},
	"dns1123Subdomain": {rule: "a DNS-1123 subdomain",
		check: joinMsgs(validation.IsDNS1123Subdomain)},
	"labelKey":             {rule: "a label key", check: joinMsgs(content.IsLabelKey)},
	"labelValue":           {rule: "a label value", check: joinMsgs(content.IsLabelValue)},
	"resourceName":         {rule: "a container resource: cpu, memory, ephemeral-storage, hugepages-<size> or domain/name", check: checkResourceName},
	"extendedResourceName": {rule: "an extended resource name such as nvidia.com/gpu", check: checkExtendedResourceName},
	"envName":              {rule: "an environment variable name", check: joinMsgs(validation.IsEnvVarName)},
	"image":                {rule: "a container image reference", check: checkImage},
	"imageTag":             {rule: "an image tag", check: checkImageTag},
	"imageRepository":      {rule: "an image repository without tag or digest", check: checkImageRepository},
	"absPath":              {rule: "an absolute path", check: checkAbsPath},
	"s3URI":                {rule: "an s3:// URI", check: checkS3URI},
	"absPathOrURI":         {rule: "an absolute path, or an s3:// or gs:// URI", check: checkAbsPathOrURI},
	"base64":               {rule: "base64 text (standard alphabet, padded)", check: checkBase64},
	"int": {rule: "an integer", check: func(s string) string {
		if _, ok := parseInt(s); !ok {
			return "must be an integer"
		}
		return ""
	}},
}

func formatNames() []string {
	var out []string
	for n := range formats {
		if n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// joinMsgs adapts an apimachinery validator, which returns a list of
// messages, to a one-line rule.
func joinMsgs(f func(string) []string) func(string) string {
	return func(s string) string {
		if msgs := f(s); len(msgs) > 0 {
			return strings.Join(msgs, "; ")
		}
		return ""
	}
}

func checkImage(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return "must be an image reference without spaces, such as registry/repo:tag"
	}
	repo, _, _ := strings.Cut(s, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	if repo == "" || repo != strings.ToLower(repo) {
		return "must be an image reference with a lower-case repository, such as registry/repo:tag"
	}
	return ""
}

// checkResourceName applies the API server's rules for the resource names
// of container limits: a standard resource, or an extended one with a domain.
func checkResourceName(s string) string {
	if msgs := content.IsLabelKey(s); len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	if strings.Contains(s, "/") {
		if !strings.Contains(s, "kubernetes.io/") {
			return checkExtendedResourceName(s)
		}
		return ""
	}
	switch {
	case s == "cpu" || s == "memory" || s == "ephemeral-storage":
		return ""
	case strings.HasPrefix(s, "hugepages-"):
		if q, err := resource.ParseQuantity(strings.TrimPrefix(s, "hugepages-")); err != nil || q.Sign() <= 0 {
			return "must name a page size, such as hugepages-2Mi"
		}
		return ""
	}
	return "must be cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with a domain, such as example.com/fpga"
}

func checkExtendedResourceName(s string) string {
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") {
		return "must be an extended resource with a domain, such as nvidia.com/gpu"
	}
	if msgs := content.IsLabelKey("requests." + s); len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return ""
}

// checkResourceValue applies the API server's rules for the value of one
// container limit: extended resources count whole devices, memory and
// storage whole bytes, and huge pages whole pages.
func checkResourceValue(name string, q resource.Quantity) string {
	switch {
	case strings.HasPrefix(name, "hugepages-"):
		page, err := resource.ParseQuantity(strings.TrimPrefix(name, "hugepages-"))
		if err != nil || page.Value() <= 0 || q.MilliValue()%1000 != 0 || q.Value()%page.Value() != 0 {
			return "must be a whole number of " + strings.TrimPrefix(name, "hugepages-") + " pages"
		}
	case name == "memory" || name == "ephemeral-storage":
		if q.MilliValue()%1000 != 0 {
			return "must be a whole number of bytes, such as 512Mi or 4Gi"
		}
	case strings.Contains(name, "/") && !strings.Contains(name, "kubernetes.io/"):
		if q.MilliValue()%1000 != 0 {
			return "must be a whole number: extended resources count whole devices"
		}
	}
	return ""
}

// imageTag is the grammar of a tag in an image reference.
var imageTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// checkImageRepository: an image reference with neither tag nor digest,
// for prototypes that take the tag separately (the Helm chart's
// image.repository and image.tag).
func checkImageRepository(s string) string {
	if msg := checkImage(s); msg != "" {
		return msg
	}
	if strings.Contains(s, "@") || strings.LastIndex(s, ":") > strings.LastIndex(s, "/") {
		return "must be an image repository without tag or digest, such as registry.example.com/team/horovod (the tag is image.tag)"
	}
	return ""
}

func checkImageTag(s string) string {
	if !imageTag.MatchString(s) {
		return "must be an image tag: letters, digits, _ . and -, not starting with . or -, at most 128 characters"
	}
	return ""
}

func checkAbsPath(s string) string {
	if !strings.HasPrefix(s, "/") {
		return "must be an absolute path"
	}
	if path.Clean(s) != s {
		return "must be a clean absolute path (no //, ./ or ../, no trailing /)"
	}
	return ""
}

func checkS3URI(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "must be an s3:// URI such as s3://bucket/prefix"
	}
	return ""
}

// checkAbsPathOrURI: a directory in the pod, or one in an object store
// that TensorFlow and TensorBoard read directly (their logdir).
func checkAbsPathOrURI(s string) string {
	if strings.HasPrefix(s, "/") {
		return checkAbsPath(s)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "s3" && u.Scheme != "gs") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "must be an absolute path, or an s3:// or gs:// URI such as gs://bucket/runs"
	}
	return ""
}

// checkBase64: what the API server takes in a Secret's data.
func checkBase64(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return "must be base64 text on one line, without spaces"
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(s); err != nil {
		return "must be base64 text, as `echo -n ... | base64 -w0` prints it"
	}
	return ""
}

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

func objectKindNames() []string {
	out := make([]string, 0, len(objectKinds))
	for n := range objectKinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

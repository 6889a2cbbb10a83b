package format

import (
	"encoding/base64"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// formats is the vocabulary, one entry per format. The rule texts show in
// describe, the JSON Schema and error messages (golden files pin them).
var formats = []Format{
	{
		Name:  "",
		Rule:  "any text",
		Check: func(string) string { return "" },
		Draw:  func(r *Rand) string { return r.Text(r.IntN(10) == 0) },
	},
	{
		Name: "nonEmpty",
		Rule: "any non-empty text",
		Check: func(s string) string {
			if strings.TrimSpace(s) == "" {
				return "must not be empty"
			}
			return ""
		},
		Draw: func(r *Rand) string { return r.Text(false) },
	},
	{
		Name:  "dns1035Label",
		Rule:  "a DNS-1035 label",
		Check: joinMsgs(validation.IsDNS1035Label),
		Draw:  func(r *Rand) string { return r.DNS1035Label(1 + r.IntN(20)) },
	},
	{
		Name:  "dns1123Label",
		Rule:  "a DNS-1123 label",
		Check: joinMsgs(validation.IsDNS1123Label),
		Draw:  func(r *Rand) string { return r.DNS1123Label(1 + r.IntN(30)) },
	},
	{
		Name:  "dns1123Subdomain",
		Rule:  "a DNS-1123 subdomain",
		Check: joinMsgs(validation.IsDNS1123Subdomain),
		Draw:  (*Rand).Subdomain,
	},
	{
		Name:  "labelKey",
		Rule:  "a label key",
		Check: joinMsgs(content.IsLabelKey),
		Draw:  (*Rand).LabelKey,
	},
	{
		// userLabelKey: a label key a user may add to a job's objects and
		// pods: not one that trainsonnet sets, whose Services,
		// NetworkPolicy and workloads select on them, nor one that the
		// Job or Deployment controller sets on the pods.
		Name:  "userLabelKey",
		Rule:  "a label key other than those trainsonnet, Kueue and the Kubernetes controllers set (app.kubernetes.io/name, instance, component, managed-by; kueue.x-k8s.io/queue-name, priority-class, pod-group-name, managed, prebuilt-workload-name; job-name, controller-uid, batch.kubernetes.io/*, pod-template-hash)",
		Check: checkUserLabelKey,
		Draw: func(r *Rand) string {
			for {
				if k := r.LabelKey(); checkUserLabelKey(k) == "" {
					return k
				}
			}
		},
	},
	{
		// userAnnotationKey: an annotation key a user may add to a job's
		// objects and pods: not one by which Kueue would admit the job
		// otherwise than whole, or would end it at an eviction.
		Name:  "userAnnotationKey",
		Rule:  "an annotation key other than Kueue's that change how a job is admitted (kueue.x-k8s.io/pod-group-total-count, pod-suspending-parent, pod-group-fast-admission, pod-group-serving, retriable-in-group, job-min-parallelism)",
		Check: checkUserAnnotationKey,
		Draw: func(r *Rand) string {
			for {
				if k := r.LabelKey(); checkUserAnnotationKey(k) == "" {
					return k
				}
			}
		},
	},
	{
		Name:  "labelValue",
		Rule:  "a label value",
		Check: joinMsgs(content.IsLabelValue),
		Draw:  (*Rand).LabelValue,
	},
	{
		Name:  "resourceName",
		Rule:  "a container resource: cpu, memory, ephemeral-storage, hugepages-<size> or domain/name",
		Check: checkResourceName,
		// cpu, memory, ephemeral-storage, hugepages-<size>, or an
		// extended resource.
		Draw: func(r *Rand) string {
			switch x := r.IntN(20); {
			case x < 6:
				return []string{"cpu", "memory", "ephemeral-storage"}[r.IntN(3)]
			case x < 7:
				return []string{"hugepages-2Mi", "hugepages-1Gi"}[r.IntN(2)]
			}
			return drawExtendedResourceName(r)
		},
	},
	{
		Name:  "extendedResourceName",
		Rule:  "an extended resource name such as nvidia.com/gpu",
		Check: checkExtendedResourceName,
		Draw:  drawExtendedResourceName,
	},
	{
		Name:  "envName",
		Rule:  "an environment variable name",
		Check: joinMsgs(validation.IsEnvVarName),
		Draw:  (*Rand).EnvName,
	},
	{
		Name:  "image",
		Rule:  "a container image reference",
		Check: checkImage,
		// A repository, mostly with a tag, sometimes with a digest.
		Draw: func(r *Rand) string {
			var b strings.Builder
			b.WriteString(drawImageRepository(r))
			if r.IntN(4) > 0 {
				b.WriteString(":" + drawImageTag(r))
			}
			if r.IntN(5) == 0 {
				b.WriteString("@sha256:" + r.From("0123456789abcdef", 64))
			}
			return b.String()
		},
	},
	{
		Name:  "imageTag",
		Rule:  "an image tag",
		Check: checkImageTag,
		Draw:  drawImageTag,
	},
	{
		Name:  "imageRepository",
		Rule:  "an image repository without tag or digest",
		Check: checkImageRepository,
		Draw:  drawImageRepository,
	},
	{
		Name:  "absPath",
		Rule:  "an absolute path",
		Check: checkAbsPath,
		Draw:  (*Rand).AbsPath,
	},
	{
		Name:  "cidr",
		Rule:  "an IPv4 or IPv6 CIDR such as 10.128.0.0/20, with no bits set after the prefix",
		Check: checkCIDR,
		Draw: func(r *Rand) string {
			return "10." + strconv.Itoa(r.IntN(256)) + ".0.0/" + strconv.Itoa(16+r.IntN(9)&^7)
		},
	},
	{
		Name:  "s3URI",
		Rule:  "an s3:// URI",
		Check: checkS3URI,
		Draw:  func(r *Rand) string { return r.URI("s3") },
	},
	{
		// Where a job reads or writes files that outlive it, such as
		// TensorBoard's logdir: a path in the pod (a volume) or object
		// storage that TensorFlow and TensorBoard open directly.
		Name:  "absPathOrURI",
		Rule:  "an absolute path, or an s3:// or gs:// URI",
		Check: checkAbsPathOrURI,
		Draw: func(r *Rand) string {
			if r.IntN(3) == 0 {
				return r.AbsPath()
			}
			return r.URI([]string{"s3", "gs"}[r.IntN(2)])
		},
	},
	{
		// What the API server takes in a Secret's data.
		Name:  "base64",
		Rule:  "base64 text (standard alphabet, padded)",
		Check: checkBase64,
		Draw: func(r *Rand) string {
			b := make([]byte, 1+r.IntN(48))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return base64.StdEncoding.EncodeToString(b)
		},
	},
	{
		// One line of text, for values written into a line of a file
		// (spark-defaults.conf): a line break would add a line of its own.
		Name:  "line",
		Rule:  "one line of text",
		Check: checkLine,
		Draw:  func(r *Rand) string { return r.Text(false) },
	},
	{
		// A name that becomes a directory or an environment's name
		// (horovod-dask's projectName, /root/<projectName>): "" is none.
		Name:  "optionalFileName",
		Rule:  "empty, or a file name: not . or .., without / or line breaks",
		Check: checkOptionalFileName,
		Draw:  func(r *Rand) string { return r.DNS1123Label(1 + r.IntN(12)) },
	},
	{
		Name: "int",
		Rule: "an integer",
		Check: func(s string) string {
			if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
				return "must be an integer"
			}
			return ""
		},
		Draw: func(r *Rand) string { return strconv.FormatInt(r.Int64N(1<<31), 10) },
	},
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

// checkImage parses an image reference as the kubelet and the registries
// do (github.com/distribution/reference): a lower-case repository, then a
// tag of at most 128 characters and/or a digest.
func checkImage(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return "must be an image reference without spaces, such as registry/repo:tag"
	}
	if _, err := reference.ParseNormalizedNamed(s); err != nil {
		return "must be an image reference such as registry/repo:tag (" + strings.TrimPrefix(err.Error(), "invalid reference format: ") + ")"
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

// drawExtendedResourceName draws domain/name: well-known ones half the time.
func drawExtendedResourceName(r *Rand) string {
	if r.IntN(2) == 0 {
		return []string{"nvidia.com/gpu", "amd.com/gpu", "rdma/hca_shared_devices_a", "example.com/fpga"}[r.IntN(4)]
	}
	return r.Subdomain() + "/" + r.QualifiedName(1+r.IntN(20))
}

// CheckResourceValue applies the API server's rules for the value of one
// container limit of the resource name (format resourceName): extended
// resources count whole devices, memory and storage whole bytes, and huge
// pages whole pages.
func CheckResourceValue(name string, q resource.Quantity) string {
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

// imageTag is the grammar of a tag in an image reference, but for its
// length (at most 128), which checkImageTag counts: a bounded repetition
// ({0,127}) compiles to 127 copies of its class, 3-7 ms of every start.
var imageTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// checkImageRepository: an image reference with neither tag nor digest,
// for prototypes that take the tag separately (the Helm chart's
// image.repository and image.tag).
func checkImageRepository(s string) string {
	if msg := checkImage(s); msg != "" {
		return msg
	}
	if n, err := reference.ParseNormalizedNamed(s); err != nil || !reference.IsNameOnly(n) {
		return "must be an image repository without tag or digest, such as registry.example.com/team/horovod (the tag is image.tag)"
	}
	return ""
}

// drawImageRepository: an optional registry (with a port, sometimes), then
// one to three path components.
func drawImageRepository(r *Rand) string {
	var b strings.Builder
	switch r.IntN(3) {
	case 0:
		b.WriteString(r.Subdomain() + ".example.com/")
	case 1:
		b.WriteString("localhost:" + strconv.Itoa(1024+r.IntN(60000)) + "/")
	}
	parts := make([]string, 1+r.IntN(3))
	for i := range parts {
		parts[i] = r.DNS1123Label(1+r.IntN(10)) + []string{"", "_x", ".y", "__z"}[r.IntN(4)]
	}
	b.WriteString(strings.Join(parts, "/"))
	return b.String()
}

func checkImageTag(s string) string {
	if len(s) > 128 || !imageTag.MatchString(s) {
		return "must be an image tag: letters, digits, _ . and -, not starting with . or -, at most 128 characters"
	}
	return ""
}

// drawImageTag: letters, digits and _ . -, not starting with . or -.
func drawImageTag(r *Rand) string { return r.QualifiedName(1 + r.IntN(20)) }

func checkAbsPath(s string) string {
	if !strings.HasPrefix(s, "/") {
		return "must be an absolute path"
	}
	if path.Clean(s) != s {
		return "must be a clean absolute path (no //, ./ or ../, no trailing /)"
	}
	return ""
}

// uriRE and s3RE: a URI as trainsonnet takes it (schemas.go): a bucket,
// then a path; no user, query, fragment, escape or space.
var (
	s3RE         = regexp.MustCompile(`^s3://` + uriRest + `$`)
	absPathURIRE = regexp.MustCompile(`^(` + absPath + `|(s3|gs)://` + uriRest + `)$`)
)

func checkS3URI(s string) string {
	if !s3RE.MatchString(s) {
		return "must be an s3:// URI such as s3://bucket/prefix (no user, query, fragment, % escape or space)"
	}
	return ""
}

// checkAbsPathOrURI: a clean absolute path, or an s3:// or gs:// URI
// naming its bucket, with neither user, query, fragment, escape nor space.
func checkAbsPathOrURI(s string) string {
	if strings.HasPrefix(s, "/") {
		return checkAbsPath(s)
	}
	if !absPathURIRE.MatchString(s) {
		return "must be an absolute path, or an s3:// or gs:// URI such as gs://bucket/runs (no user, query, fragment, % escape or space)"
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

// checkUserLabelKey: a label key, and not one of the keys trainsonnet or a
// controller sets (a user's value would silently break the job: the pods
// would no longer match their Services and NetworkPolicy, or the Job
// controller would refuse them).
func checkUserLabelKey(k string) string {
	if msg := joinMsgs(content.IsLabelKey)(k); msg != "" {
		return msg
	}
	switch {
	case k == "app.kubernetes.io/name" || k == "app.kubernetes.io/instance" || k == "app.kubernetes.io/component":
		return "is set by trainsonnet: the job's Services, NetworkPolicy and workloads select on it (name the job with --name)"
	case k == "app.kubernetes.io/managed-by":
		return "is set by trainsonnet"
	case k == "job-name" || k == "controller-uid" || strings.HasPrefix(k, "batch.kubernetes.io/") || k == "pod-template-hash":
		return "is set by Kubernetes on the pods (the Job and Deployment controllers)"
	case k == kueuePrefix+"queue-name":
		return "is set by queue (--queue): as a label of every object it would make each Job of the job a Kueue workload of its own, admitted apart from the others"
	case k == kueuePrefix+"pod-group-name":
		return "is set by queue (--queue): it makes the pods of a job of several Jobs one Kueue workload"
	case k == kueuePrefix+"priority-class":
		return "is set by workloadPriorityClass (--workload-priority-class)"
	case k == kueuePrefix+"managed" || k == kueuePrefix+"prebuilt-workload-name":
		return "is set by Kueue"
	}
	return ""
}

// kueuePrefix is the prefix of Kueue's label and annotation keys.
const kueuePrefix = "kueue.x-k8s.io/"

// checkUserAnnotationKey: a label key's rule, and none of Kueue's keys
// that would admit a queued job in part, or end it at an eviction.
func checkUserAnnotationKey(k string) string {
	if msg := joinMsgs(content.IsLabelKey)(k); msg != "" {
		return msg
	}
	switch k {
	case kueuePrefix + "pod-group-total-count":
		return "is set by queue (--queue): the number of the job's pods, which Kueue admits together"
	case kueuePrefix + "pod-suspending-parent":
		return "is set by queue (--queue): it lets a queued job's pods go when the job is deleted"
	case kueuePrefix + "pod-group-fast-admission", kueuePrefix + "job-min-parallelism":
		return "would let Kueue admit part of a queued job, which is admitted whole"
	case kueuePrefix + "retriable-in-group":
		return "would make Kueue end a queued job's workload at its first eviction, which requeues it"
	case kueuePrefix + "pod-group-serving":
		return "would make Kueue keep a queued job's quota after the job has ended"
	}
	return ""
}

// checkCIDR: the API server's rule for a NetworkPolicy ipBlock's cidr.
func checkCIDR(s string) string {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		return "must be a CIDR such as 10.128.0.0/20"
	}
	if n.String() != s {
		return "must have no bits set after the prefix (" + n.String() + ")"
	}
	return ""
}

func checkLine(s string) string {
	if strings.ContainsAny(s, "\n\r\x00") {
		return "must be one line of text: a line break would start a line of its own"
	}
	return ""
}

func checkOptionalFileName(s string) string {
	if s == "" {
		return ""
	}
	if s == "." || s == ".." || strings.ContainsAny(s, "/\n\r\x00") {
		return "must be a file name: not . or .., without / or line breaks (it becomes a directory)"
	}
	return ""
}

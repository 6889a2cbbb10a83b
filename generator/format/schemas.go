package format

import (
	"regexp"
	"strconv"
	"strings"
)

// The JSON Schema of each built-in format, said with patterns (the syntax
// RE2 and ECMA-262 share) so that an editor takes exactly the values the
// format's Check takes: TestFormatSchemas holds each to its Check on drawn
// values and their near misses, and the generator's corpus test does the
// same for every parameter of every prototype.

const (
	// qualifiedName is the name part of a label key (content.IsLabelKey):
	// at most 63 characters.
	qualifiedName = `[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?`
	// dnsLabel and subdomain are DNS-1123's, lower case.
	dnsLabel  = `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
	subdomain = dnsLabel + `(\.` + dnsLabel + `)*`
	// labelValue is a label value's (at most 63: maxLength).
	labelValue = `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?`
	// absPath is a clean absolute path: no empty, . or .. segment, no
	// trailing /.
	absPath = `(/|(/([^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+))+)`
	// uriHost is a bucket as trainsonnet takes it in a URI: no user,
	// port brackets, escapes or spaces.
	uriRest = `[^/?#@\s%\[\]]+(/[^?#\s%]*)?`
)

// labelKeySchema: a label key, a name alone or prefix/name with a
// DNS-1123 subdomain of at most max characters as prefix.
func labelKeySchema(maxPrefix int) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"pattern": `^` + qualifiedName + `$`},
		map[string]any{"allOf": []any{
			map[string]any{"pattern": `^` + subdomain + `/` + qualifiedName + `$`},
			map[string]any{"pattern": `^[^/]{1,` + strconv.Itoa(maxPrefix) + `}/`},
		}},
	}}
}

// notIn: a schema that refuses the values, and the values with the
// prefixes.
func notIn(values []string, prefixes ...string) map[string]any {
	var alts []any
	if len(values) > 0 {
		alts = append(alts, map[string]any{"enum": values})
	}
	for _, p := range prefixes {
		alts = append(alts, map[string]any{"pattern": `^` + regexp.QuoteMeta(p)})
	}
	return map[string]any{"not": map[string]any{"anyOf": alts}}
}

func allOf(schemas ...map[string]any) map[string]any {
	list := make([]any, len(schemas))
	for i, s := range schemas {
		list[i] = s
	}
	return map[string]any{"allOf": list}
}

// userLabelKeys and userAnnotationKeys are the keys checkUserLabelKey and
// checkUserAnnotationKey refuse (their prefixes: batch.kubernetes.io/).
var (
	userLabelKeys = []string{
		"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component", "app.kubernetes.io/managed-by",
		"job-name", "controller-uid", "pod-template-hash",
		kueuePrefix + "queue-name", kueuePrefix + "pod-group-name", kueuePrefix + "priority-class",
		kueuePrefix + "managed", kueuePrefix + "prebuilt-workload-name",
	}
	userAnnotationKeys = []string{
		kueuePrefix + "pod-group-total-count", kueuePrefix + "pod-suspending-parent", kueuePrefix + "pod-group-fast-admission",
		kueuePrefix + "job-min-parallelism", kueuePrefix + "retriable-in-group", kueuePrefix + "pod-group-serving",
	}
)

// An image reference as github.com/distribution/reference's
// ParseNormalizedNamed takes it: a domain (its first component has a dot,
// a port or an upper-case letter, or is localhost) and a path of
// lower-case components, or a path alone, which Docker Hub's name
// lengthens (docker.io/library/ before one component, docker.io/ before
// more): the whole name at most 255 characters.
const (
	domainComponent = `([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	upperComponent  = `([A-Z]|[a-zA-Z0-9][a-zA-Z0-9-]*[A-Z])([a-zA-Z0-9-]*[a-zA-Z0-9])?`
	pathComponent   = `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
	plainComponent  = `[a-z0-9]+((_|__|-+)[a-z0-9]+)*` // no dot: not a domain
	imageDomain     = `(` + domainComponent + `(\.` + domainComponent + `)+(:[0-9]+)?|` + domainComponent + `:[0-9]+|` + upperComponent + `(:[0-9]+)?|localhost)`
	imagePath       = pathComponent + `(/` + pathComponent + `)*`
	imageTagPattern = `[\w][\w.-]{0,127}`
	imageDigest     = `(sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})` // go-digest's
)

// imageSchema: a reference (with tag and digest when tagged), its
// normalized name at most 255 characters, and not 64 hexadecimal
// characters alone.
func imageSchema(tagged bool) map[string]any {
	suffix, length := `$`, func(n int) string { return `^[^@]{1,` + strconv.Itoa(n) + `}$` }
	if tagged {
		suffix = `(:` + imageTagPattern + `)?(@` + imageDigest + `)?$`
		length = func(n int) string {
			return `^([^@]{1,` + strconv.Itoa(n) + `}|[^@]{1,` + strconv.Itoa(n) + `}:` + imageTagPattern + `)(@.*)?$`
		}
	}
	branch := func(structure string, n int, more ...map[string]any) map[string]any {
		return allOf(append([]map[string]any{{"pattern": `^` + structure + suffix}, {"pattern": length(n)}}, more...)...)
	}
	return allOf(
		map[string]any{"anyOf": []any{
			branch(imageDomain+`/`+imagePath, 255),
			branch(pathComponent, 255-len("docker.io/library/")),
			branch(plainComponent+`(/`+pathComponent+`)+`, 255-len("docker.io/"), map[string]any{"not": map[string]any{"pattern": `^localhost/`}}),
		}},
		map[string]any{"not": map[string]any{"pattern": `^[a-f0-9]{64}$`}},
	)
}

// schemas are the built-in formats' schemas, by name.
var schemas = map[string]map[string]any{
	"":                  {},
	"nonEmpty":          {"pattern": `\S`},
	"dns1035Label":      {"pattern": `^[a-z]([-a-z0-9]*[a-z0-9])?$`, "maxLength": 63},
	"dns1123Label":      {"pattern": `^` + dnsLabel + `$`, "maxLength": 63},
	"dns1123Subdomain":  {"pattern": `^` + subdomain + `$`, "maxLength": 253},
	"labelKey":          labelKeySchema(253),
	"userLabelKey":      allOf(labelKeySchema(253), notIn(userLabelKeys, "batch.kubernetes.io/")),
	"userAnnotationKey": allOf(labelKeySchema(253), notIn(userAnnotationKeys)),
	"labelValue":        {"pattern": `^` + labelValue + `$`, "maxLength": 63},
	"resourceName": {"anyOf": []any{
		map[string]any{"enum": []string{"cpu", "memory", "ephemeral-storage"}},
		allOf(labelKeySchema(253), map[string]any{"pattern": `^hugepages-` + positiveQuantity + `$`}),
		allOf(labelKeySchema(253), map[string]any{"pattern": `kubernetes\.io/`}),
		extendedResourceSchema,
	}},
	"extendedResourceName": extendedResourceSchema,
	"envName":              allOf(map[string]any{"pattern": `^[-._a-zA-Z][-._a-zA-Z0-9]*$`}, map[string]any{"not": map[string]any{"pattern": `^(\.|\.\..*)$`}}),
	"image":                imageSchema(true),
	"imageTag":             {"pattern": `^` + imageTagPattern + `$`},
	"imageRepository":      imageSchema(false),
	"absPath":              {"pattern": `^` + absPath + `$`},
	"cidr": {"anyOf": []any{
		map[string]any{"pattern": `^` + ipv4CIDR() + `$`},
		// IPv6 as net.IPNet prints it; the bits after the prefix are
		// gen's to check.
		map[string]any{"pattern": `^[0-9a-f:.]*:[0-9a-f:.]*/(` + IntRange(0, 128)[1:len(IntRange(0, 128))-1] + `)$`},
	}},
	"s3URI":            {"pattern": `^s3://` + uriRest + `$`},
	"absPathOrURI":     {"pattern": `^(` + absPath + `|(s3|gs)://` + uriRest + `)$`},
	"base64":           {"pattern": `^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$`, "minLength": 1},
	"line":             {"pattern": `^[^\n\r\x00]*$`},
	"optionalFileName": allOf(map[string]any{"pattern": `^[^/\n\r\x00]*$`}, map[string]any{"not": map[string]any{"enum": []string{".", ".."}}}),
	"int":              {"pattern": `^\s*` + IntRange(-1<<63, 1<<63-1) + `\s*$`},
}

// extendedResourceSchema: domain/name, not of kubernetes.io, whose
// requests.<domain> is a subdomain (253 characters: the domain 244).
var extendedResourceSchema = allOf(
	labelKeySchema(244),
	map[string]any{"pattern": `/`},
	map[string]any{"not": map[string]any{"pattern": `kubernetes\.io/`}},
)

// positiveQuantity is a quantity above zero, as a huge page size.
const positiveQuantity = `\+?(0*[1-9]\d*(\.\d*)?|0*\.\d*[1-9]\d*)([eE][-+]?\d+|[numkMGTPE]|[KMGTPE]i)?`

// ipv4CIDR: a.b.c.d/n with no bits set after the prefix, as net.IPNet
// prints it (no leading zeros).
func ipv4CIDR() string {
	octet := func(lo, hi, step int) string {
		var vs []string
		for v := lo; v <= hi; v += step {
			vs = append(vs, strconv.Itoa(v))
		}
		return "(" + strings.Join(vs, "|") + ")"
	}
	anyOctet := `(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`
	var alts []string
	for n := 0; n <= 32; n++ {
		var parts []string
		for i := range 4 {
			bits := n - 8*i
			switch {
			case bits >= 8:
				parts = append(parts, anyOctet)
			case bits <= 0:
				parts = append(parts, "0")
			default:
				parts = append(parts, octet(0, 255, 1<<(8-bits)))
			}
		}
		alts = append(alts, strings.Join(parts, `\.`)+"/"+strconv.Itoa(n))
	}
	return "(" + strings.Join(alts, "|") + ")"
}

package format

import (
	"math/rand/v2"
	"path"
	"strings"
)

// Rand draws random strings: the values of the formats (Format.Draw) and
// the pieces they are made of, which the sweep also uses for the names and
// keys inside the objects it draws. Everything comes from the one
// *rand.Rand, so a seed replays a whole sweep.
type Rand struct {
	*rand.Rand
	// Paths are where absolute paths are mostly drawn (AbsPath): a
	// prototype's paths often have to be under a directory it mounts.
	Paths []string
}

// NewRand draws from r.
func NewRand(r *rand.Rand) *Rand { return &Rand{Rand: r} }

const (
	lower    = "abcdefghijklmnopqrstuvwxyz"
	upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits   = "0123456789"
	alnum    = lower + digits
	anyASCII = " !\"#$%&'()*+-./:;<>?@[\\]^_`{|}~" + alnum + upper
)

// Pick draws one of chars.
func (r *Rand) Pick(chars string) byte { return chars[r.IntN(len(chars))] }

// From draws n of chars.
func (r *Rand) From(chars string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = r.Pick(chars)
	}
	return string(b)
}

// DNS1035Label draws a DNS-1035 label of n characters: a letter, then
// letters, digits and dashes, ending with a letter or digit.
func (r *Rand) DNS1035Label(n int) string {
	if n == 1 {
		return string(r.Pick(lower))
	}
	return string(r.Pick(lower)) + r.From(alnum+"-", n-2) + string(r.Pick(alnum))
}

// DNS1123Label draws a DNS-1123 label of n characters.
func (r *Rand) DNS1123Label(n int) string {
	if n == 1 {
		return string(r.Pick(alnum))
	}
	return string(r.Pick(alnum)) + r.From(alnum+"-", n-2) + string(r.Pick(alnum))
}

// Subdomain draws a DNS-1123 subdomain of one to three labels.
func (r *Rand) Subdomain() string {
	parts := make([]string, 1+r.IntN(3))
	for i := range parts {
		parts[i] = r.DNS1123Label(1 + r.IntN(15))
	}
	return strings.Join(parts, ".")
}

// QualifiedName draws the name part of a label key, n characters:
// alphanumerics at both ends, dashes, dots and underscores between.
func (r *Rand) QualifiedName(n int) string {
	an := alnum + upper
	if n == 1 {
		return string(r.Pick(an))
	}
	return string(r.Pick(an)) + r.From(an+"-_.", n-2) + string(r.Pick(an))
}

// LabelKey draws a label key, with a prefix now and then.
func (r *Rand) LabelKey() string {
	name := r.QualifiedName(1 + r.IntN(30))
	if r.IntN(10) < 3 {
		return r.Subdomain() + "/" + name
	}
	return name
}

// LabelValue draws a label value, empty now and then.
func (r *Rand) LabelValue() string {
	if r.IntN(10) == 0 {
		return ""
	}
	return r.QualifiedName(1 + r.IntN(63))
}

// EnvName draws an environment variable name ([-._a-zA-Z][-._a-zA-Z0-9]*).
func (r *Rand) EnvName() string {
	first := "-._" + lower + upper
	if r.IntN(2) == 0 {
		first = upper
	}
	return string(r.Pick(first)) + r.From("-._"+alnum+upper+"_", r.IntN(24))
}

// trickyTexts are strings that YAML, JSON, shells or Kubernetes treat
// specially.
var trickyTexts = []string{"true", "null", "~", "0x1F", "1e3", "-", "- x", "#x", "&a", "*a", "'q'", `"dq"`,
	"a: b", "{}", "[]", "%d", "$(HOME)", "${X}", "`id`", "a\\b", "é日本ß", " lead", "trail ", "a;b|c&&d", "x=y"}

// Text draws free text without commas, which a map value given as a flag
// cannot hold (k=v,k2=v2); empty now and then if allowEmpty.
func (r *Rand) Text(allowEmpty bool) string {
	if allowEmpty && r.IntN(5) == 0 {
		return ""
	}
	if r.IntN(4) == 0 {
		return trickyTexts[r.IntN(len(trickyTexts))]
	}
	s := r.From(strings.ReplaceAll(anyASCII, ",", ""), 1+r.IntN(40))
	if strings.TrimSpace(s) == "" {
		s += "x"
	}
	return s
}

// AbsPath draws a clean absolute path: mostly (92%) one of Paths or one
// below it, else a fresh one.
func (r *Rand) AbsPath() string {
	if len(r.Paths) > 0 && r.IntN(100) < 92 {
		base := r.Paths[r.IntN(len(r.Paths))]
		if r.IntN(3) == 0 {
			return base
		}
		return path.Join(base, r.DNS1123Label(1+r.IntN(12)))
	}
	parts := make([]string, 1+r.IntN(4))
	for i := range parts {
		parts[i] = r.QualifiedName(1 + r.IntN(12))
	}
	return "/" + strings.Join(parts, "/")
}

// URI draws <scheme>://<bucket>[/<key>...].
func (r *Rand) URI(scheme string) string {
	u := scheme + "://" + r.DNS1123Label(3+r.IntN(20))
	for i := r.IntN(3); i > 0; i-- {
		u += "/" + r.QualifiedName(1+r.IntN(12))
	}
	return u
}

// NearMisses are n values of f drawn from it, each with its near misses
// (spaces, case, a character at an end, a long tail), and values any
// format meets: what a test holds a format's schema to its check with.
func NearMisses(f *Format, r *Rand, n int) []string {
	var out []string
	for range n {
		v := f.Draw(r)
		out = append(out, v, v+" ", " "+v, v+"\n", strings.ToUpper(v), strings.ToLower(v), v+"-", "-"+v, v+".", "."+v,
			v+"/", "/"+v, v+"//x", v+"/./x", v+"/../x", v+"a b", v+"_", v+"$", v+"é", v+"%41", v+"?q", v+"#f", v+":1", v+"@x",
			v+strings.Repeat("x", 60), v+strings.Repeat("x", 300), v+"\x00")
	}
	return append(out, "", " ", "a", "A", "1", "-", ".", "..", "/", "//", "a b", "a\tb", "*", "=", "a=b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 253), strings.Repeat("a", 254),
		"10.0.0.0/8", "10.0.0.1/8", "::/0", "2001:db8::/32", "2001:DB8::/32", "s3://b", "s3://b/p", "gs://b/p", "s3://u@b/p",
		"hugepages-2Mi", "hugepages-0", "cpu", "memory", "nvidia.com/gpu", "kubernetes.io/x", "x.kubernetes.io/y",
		"app.kubernetes.io/name", "batch.kubernetes.io/job-name", "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/pod-group-total-count",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "Foo/bar", "foo/Bar", "EXAMPLE.com/foo", "localhost/foo", "localhost:5000/foo",
		"QUJD", "QUI=", "QR==", "QQ==", "QUJ=", "AB", "+3", "-3", " 3 ", "9223372036854775808")
}

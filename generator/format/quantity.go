package format

import (
	"regexp"
	"strconv"
	"strings"
)

// The quantities trainsonnet takes, as patterns that a check and the JSON
// Schema share, so that an editor and gen agree on every value: a
// Kubernetes quantity (resource.ParseQuantity's grammar), not negative,
// and under about 10^15 of its unit, said in digits so that a pattern can
// say it: at most 15 digits before the point, 3 fewer for each of k, M, G
// and T (Ki, Mi, Gi, Ti), none for P and Pi, and no E or Ei (an exponent
// counts as its digits). Beyond that a quantity's text stops being its
// value (1e21 prints as 1) and nothing counts it: Kubernetes counts cpu in
// thousandths of an int64.
//
// A quantity of bytes (memory, storage) is also a whole number of bytes
// as its text says it: no n, u or m; a fraction only with a suffix that
// makes it whole (1.5k, 1.25Gi: halves, quarters, eighths and sixteenths
// with a binary suffix); no negative exponent.

// quantitySuffixes are the suffixes, with the power of ten (decimal) or
// of 1024 (binary) each stands for.
var quantitySuffixes = []struct {
	suffix string
	power  int
	binary bool
}{
	{"", 0, false}, {"n", -9, false}, {"u", -6, false}, {"m", -3, false},
	{"k", 3, false}, {"M", 6, false}, {"G", 9, false}, {"T", 12, false}, {"P", 15, false},
	{"Ki", 1, true}, {"Mi", 2, true}, {"Gi", 3, true}, {"Ti", 4, true}, {"Pi", 5, true},
}

// maxQuantityDigits is the digits before the point of a quantity without
// suffix: under 10^15.
const maxQuantityDigits = 15

// binaryFractions are the fractions (after the point, before trailing
// zeros) that make a whole number with a binary suffix: sixteenths.
const binaryFractions = `5|25|75|125|375|625|875|0625|1875|3125|4375|5625|6875|8125|9375`

// number is the pattern of a number with at most intDigits digits before
// the point (leading zeros aside) and the fraction frac ("" any digits).
func number(intDigits int, frac string) string {
	if frac == "" {
		frac = `\d*`
	}
	if intDigits <= 0 {
		return `(0+(\.(` + frac + `))?|0*\.(` + frac + `))`
	}
	return `(0*\d{1,` + strconv.Itoa(intDigits) + `}(\.(` + frac + `))?|0*\.(` + frac + `))`
}

// quantityPattern is the pattern (no anchors) of the quantities taken; of
// bytes, with bytes.
func quantityPattern(bytes bool) string {
	var alts []string
	for _, s := range quantitySuffixes {
		digits := maxQuantityDigits - s.power
		if s.binary {
			digits = maxQuantityDigits - 3*s.power
		}
		if digits > maxQuantityDigits {
			digits = maxQuantityDigits // n, u, m: small anyway
		}
		frac := ""
		switch {
		case !bytes:
		case s.power < 0:
			continue // fractions of a byte
		case s.binary:
			frac = `(` + binaryFractions + `)?0*`
		default:
			frac = `\d{0,` + strconv.Itoa(s.power) + `}0*`
		}
		alts = append(alts, number(digits, frac)+s.suffix)
	}
	// An exponent counts as its digits.
	for x := 0; x <= maxQuantityDigits; x++ {
		frac := ""
		if bytes {
			frac = `\d{0,` + strconv.Itoa(x) + `}0*`
		}
		alts = append(alts, number(maxQuantityDigits-x, frac)+`[eE]\+?0*`+strconv.Itoa(x))
	}
	if !bytes {
		alts = append(alts, number(maxQuantityDigits, "")+`[eE]-0*\d+`)
	}
	// Zero with a minus sign is zero.
	alts = append(alts, `-(0+(\.0*)?|\.0+)([eE][-+]?\d+|[numkMGTPE]|[KMGTPE]i)?`)
	return `\+?(` + strings.Join(alts, "|") + `)`
}

var (
	quantityRE = regexp.MustCompile(`^\s*` + quantityPattern(false) + `\s*$`)
	bytesRE    = regexp.MustCompile(`^\s*` + quantityPattern(true) + `\s*$`)
)

// QuantitySchema is the JSON Schema of a quantity parameter's value:
// text (with the spaces around it that a check trims), or a number.
func QuantitySchema(bytes bool) map[string]any {
	n := map[string]any{"type": "number", "minimum": 0, "exclusiveMaximum": 1e15}
	if bytes {
		n["type"] = "integer"
	}
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string", "pattern": `^\s*` + quantityPattern(bytes) + `\s*$`},
		n,
	}}
}

// QuantityTooLarge says how a quantity that ParseQuantity takes, not
// negative, is refused by the patterns, or "".
func QuantityTooLarge(s string) string {
	if quantityRE.MatchString(s) {
		return ""
	}
	return "is too large: at most 15 digits before the point, 3 fewer for each of k, M, G, T (Ki, Mi, Gi, Ti), an exponent counting as its digits; only a fraction of P or Pi, no E or Ei (under about 10^15)"
}

// QuantityNotWholeBytes says how a quantity of bytes that passed
// QuantityTooLarge is refused by the pattern of bytes, or "".
func QuantityNotWholeBytes(s string) string {
	if bytesRE.MatchString(s) {
		return ""
	}
	return "must be a whole number of bytes, such as 512Mi, 1.5Gi or 4G (no m, u or n; a fraction only with a suffix that makes it whole)"
}

// WholeResource reports whether the values of the container resource
// name count whole units, which the pattern of bytes says: memory and
// storage (bytes), huge pages, extended resources (domain/name: devices).
func WholeResource(name string) bool {
	return name == "memory" || name == "ephemeral-storage" || strings.HasPrefix(name, "hugepages-") || strings.Contains(name, "/")
}

// WholeResourceRule says how the quantity text, of the resource name
// (WholeResource), is not a whole number as the pattern of bytes says, or
// "".
func WholeResourceRule(name, text string) string {
	if !WholeResource(name) || bytesRE.MatchString(text) {
		return ""
	}
	unit := "bytes"
	switch {
	case strings.HasPrefix(name, "hugepages-"):
		unit = "bytes, of whole pages"
	case strings.Contains(name, "/"):
		unit = "devices"
	}
	return "must be a whole number of " + unit + " (no m, u or n; a fraction only with a suffix that makes it whole, such as 1.5Gi)"
}

// ResourceMapSchema is the JSON Schema of a map of container resource
// names to quantities: whole ones where WholeResource says so.
func ResourceMapSchema() map[string]any {
	return map[string]any{
		"patternProperties": map[string]any{
			`^(memory|ephemeral-storage|hugepages-.*|.*/.*)$`: QuantitySchema(true),
		},
		"additionalProperties": QuantitySchema(false),
	}
}

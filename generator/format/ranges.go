package format

import (
	"strconv"
	"strings"
)

// IntRange is a regular expression (RE2 and ECMAScript alike, without
// anchors) of the decimal integers from lo to hi, both included, as
// strconv.ParseInt reads them: an optional sign, leading zeros. A JSON
// Schema pattern says with it what a bound says of a number, for the
// integers written as text (a quoted integer of the charts, a duration's
// digits).
func IntRange(lo, hi int64) string {
	if lo > hi {
		return `[^\s\S]` // nothing
	}
	var alts []string
	if lo < 0 {
		// -hi' .. -lo' of the magnitudes
		nhi := uint64(-(lo + 1)) + 1 // |lo|, without overflow
		nlo := uint64(1)
		if hi < 0 {
			nlo = uint64(-(hi + 1)) + 1
		}
		alts = append(alts, `-0*(`+uintRange(nlo, nhi)+`)`)
	}
	if hi >= 0 {
		from := uint64(0)
		if lo > 0 {
			from = uint64(lo)
		}
		if from == 0 {
			alts = append(alts, `-0+`) // -0 is 0
		}
		alts = append(alts, `\+?0*(`+uintRange(from, uint64(hi))+`)`)
	}
	return "(" + strings.Join(alts, "|") + ")"
}

// uintRange is the regexp of lo..hi without leading zeros (0 as "0").
func uintRange(lo, hi uint64) string {
	var alts []string
	// split by number of digits
	for lo <= hi {
		d := len(strconv.FormatUint(lo, 10))
		top := pow10(d) - 1 // the largest with d digits
		if top > hi || d >= 20 {
			top = hi
		}
		alts = append(alts, sameLength(strconv.FormatUint(lo, 10), strconv.FormatUint(top, 10))...)
		if top == hi {
			break
		}
		lo = top + 1
	}
	return strings.Join(alts, "|")
}

func pow10(d int) uint64 {
	p := uint64(1)
	for range d {
		p *= 10
	}
	return p
}

// sameLength: the regexps of the numbers from a to b, written with as many
// digits each.
func sameLength(a, b string) []string {
	if a == b {
		return []string{a}
	}
	// the common prefix, then the first digit that differs
	i := 0
	for a[i] == b[i] {
		i++
	}
	prefix := a[:i]
	rest := len(a) - i - 1
	if strings.Trim(a[i+1:], "0") == "" && strings.Trim(b[i+1:], "9") == "" {
		return []string{prefix + class(a[i], b[i]) + anyDigits(rest)}
	}
	var out []string
	// a[i] with a's tail .. a[i] with 9s
	lo := a[i]
	if strings.Trim(a[i+1:], "0") != "" {
		for _, t := range sameLength(a[i+1:], strings.Repeat("9", rest)) {
			out = append(out, prefix+string(a[i])+t)
		}
		lo++
	}
	hi := b[i]
	tailB := strings.Trim(b[i+1:], "9") != ""
	if tailB {
		hi--
	}
	if lo <= hi {
		out = append(out, prefix+class(lo, hi)+anyDigits(rest))
	}
	if tailB {
		for _, t := range sameLength(strings.Repeat("0", rest), b[i+1:]) {
			out = append(out, prefix+string(b[i])+t)
		}
	}
	return out
}

func class(lo, hi byte) string {
	if lo == hi {
		return string(lo)
	}
	return "[" + string(lo) + "-" + string(hi) + "]"
}

func anyDigits(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return `\d`
	}
	return `\d{` + strconv.Itoa(n) + `}`
}

// UintRange is the pattern (no anchors, no sign, no leading zeros) of the
// integers from lo to hi, both at least 0.
func UintRange(lo, hi int64) string {
	if lo < 0 {
		lo = 0
	}
	if lo > hi {
		return `[^\s\S]`
	}
	return "(" + uintRange(uint64(lo), uint64(hi)) + ")"
}

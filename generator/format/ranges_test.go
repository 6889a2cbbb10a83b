package format

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

// TestIntRange: the pattern of lo..hi takes exactly the integers
// strconv.ParseInt reads within them, at and around every bound, and
// random ones.
func TestIntRange(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bounds := [][2]int64{{0, 0}, {1, 1}, {0, 100}, {1, 2147483647}, {0, 2147483647}, {1, 86400}, {-5, 5}, {-100, -3},
		{7, 13}, {19, 1000}, {999, 1001}, {1024, 65535}, {0, math.MaxInt64}, {math.MinInt64, math.MaxInt64}, {5, 4}}
	for range 30 {
		a, b := r.Int64N(1000000)-1000, r.Int64N(100000000)
		bounds = append(bounds, [2]int64{min(a, b), max(a, b)})
	}
	for _, bd := range bounds {
		lo, hi := bd[0], bd[1]
		re := regexp.MustCompile(`^` + IntRange(lo, hi) + `$`)
		var probes []string
		for _, n := range []int64{lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, 0, -1, 1, 9, 10, 99, 100, 101, (lo + hi) / 2} {
			probes = append(probes, strconv.FormatInt(n, 10))
		}
		for range 200 {
			probes = append(probes, strconv.FormatInt(lo+r.Int64N(max(1, min(hi-lo+3, 1<<40)))-1, 10))
		}
		probes = append(probes, "007", "+3", "-0", "00", "", "+", "-", "1 ", "1.0", "9223372036854775808", "-9223372036854775809")
		for _, s := range probes {
			n, err := strconv.ParseInt(s, 10, 64)
			want := err == nil && n >= lo && n <= hi
			if got := re.MatchString(s); got != want {
				t.Errorf("%d..%d: %q: pattern %v, ParseInt and bounds %v (%s)", lo, hi, s, got, want, IntRange(lo, hi))
			}
		}
	}
}

package format

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestQuantityPatterns: what the patterns take is a quantity Kubernetes
// parses, not negative, under 1.2e15 (so its thousandths fit an int64),
// and, of bytes, a whole number of bytes; and the ordinary ones
// are all taken.
func TestQuantityPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var probes []string
	suffixes := []string{"", "n", "u", "m", "k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "E3", "e-3", "e+2", "e15", "e16", "iG"}
	nums := []string{"0", "1", "5", "1.5", ".5", "5.", "1.25", "1.1", "0.0625", "0.03125", "999", "1000", "999999", "1000000", "12345678901234", "999999999999999", "1000000000000000", "1.2.3", "-1", "-0", "+1", "007", ""}
	for _, n := range nums {
		for _, s := range suffixes {
			probes = append(probes, n+s)
		}
	}
	for range 3000 {
		n := strconv.FormatInt(r.Int64N(1<<50)>>r.IntN(50), 10)
		if r.IntN(2) == 0 {
			n += "." + strconv.Itoa(r.IntN(10000))
		}
		probes = append(probes, n+suffixes[r.IntN(len(suffixes))])
	}
	for _, s := range probes {
		q, err := resource.ParseQuantity(s)
		general, bytes := quantityRE.MatchString(s), bytesRE.MatchString(s)
		if bytes && !general {
			t.Errorf("%q: a quantity of bytes the general pattern refuses", s)
		}
		if !general {
			continue
		}
		if err != nil || q.Sign() < 0 {
			t.Errorf("%q: taken, and not a quantity Kubernetes takes (%v)", s, err)
			continue
		}
		if q.Cmp(resource.MustParse("1200T")) >= 0 {
			t.Errorf("%q: taken, and not under 1.2e15", s)
		}
		if bytes && q.MilliValue()%1000 != 0 {
			t.Errorf("%q: taken as bytes, and not a whole number of them", s)
		}
	}
	for _, s := range []string{"1", "0", "500m", "1.5", "2", "4Gi", "512Mi", "1.5Gi", "1.25Gi", "100Ti", "999Ti", "0.5Pi", "1e3", "1E3", "1e-3", "+1", " 2Gi ", "10k", "1.5k", "2G", "999999999999999", "1n", "5u", "-0"} {
		if !quantityRE.MatchString(s) {
			t.Errorf("%q: refused", s)
		}
	}
	for _, s := range []string{"1", "0", "4Gi", "512Mi", "1.5Gi", "1.25Gi", "1.5k", "1.234k", "2G", "1e3", "1.5e3", "5.", "5.0", " 2Gi "} {
		if !bytesRE.MatchString(s) {
			t.Errorf("%q: refused as bytes", s)
		}
	}
	for _, s := range []string{"100m", "1.5", ".5", "1.1Gi", "1.2345k", "1e-3", "1n", "1.2.3", "5iG", "5K", "1E", "1Ei", "1P", "1000000000000000", "-1", "1e16"} {
		if bytesRE.MatchString(s) {
			t.Errorf("%q: taken as bytes", s)
		}
	}
	if strings.Count(quantityPattern(true), "|") < 20 {
		t.Error("the bytes pattern is too simple")
	}
}

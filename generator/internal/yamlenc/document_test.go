package yamlenc

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// checkEncodeYAML holds Document of v to what the encoder writes. (Not
// a v with keys that the encoder writes in no one order, where what it
// writes depends on the order a map gives them: yamlKeys.)
func checkEncodeYAML(t *testing.T, v any) {
	t.Helper()
	if !oneOrder(v) {
		return
	}
	want, err := yamlv2.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Document(v, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		from := max(0, i-300)
		t.Fatalf("Document differs from the encoder at byte %d:\n got ...%q\nwant ...%q", i, got[from:min(len(got), i+100)], want[from:min(len(want), i+100)])
	}
}

// oneOrder reports whether the encoder writes the keys of every map in v
// in one order.
func oneOrder(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := yamlKeys(x); !ok {
			return false
		}
		for _, e := range x {
			if !oneOrder(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !oneOrder(e) {
				return false
			}
		}
	}
	return true
}

// TestEncodeYAML: a ConfigMap of scripts and a hostfile, with text the
// fast path must leave to the encoder beside them, and keys in every
// order the encoder knows.
func TestEncodeYAML(t *testing.T) {
	script := "#!/bin/sh\n# a script\n\nset -eu\n" + strings.Repeat("  echo 'x: {y}' \"z\" # & * ! | > % @ `\n\n", 40)
	hosts := ""
	for i := range 100 {
		hosts += "job-worker-" + strconv.Itoa(i) + ".job slots=1\n"
	}
	long := strings.Repeat("x", blockMin)
	for _, v := range []any{
		map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "job", "labels": map[string]any{"a": "b"}},
			"data": map[string]any{
				"hostfile": hosts, "mpi.sh": script, "runtime.sh": script, "ssh_config": "Host *\n  Port 2222\n",
				"true": script, "1e3": hosts, "a b": script, "x_1": script, "x-1": script, "X1": script, "x10": script, "x9": script, "x01": script,
				"tabs": "\t" + script, "lead": " " + script, "trail": script + "\n", "noend": script + "x", "space": "a \n" + script,
				"é": script + "é\n", "long": long + "\n", "short": "a\nb\n", "oneline": long, "nested": map[string]any{"a": script},
				"list": []any{script, hosts}, "n": int64(4), "f": 0.5, "b": true, "null": nil,
				strings.Repeat("k", 200): script, // a key written "? key"
			},
			"binaryData": map[string]any{"z": script},
		},
		map[string]any{"a": map[string]any{"b": script}},
		map[string]any{"a": map[string]any{}, "b": map[string]any{"c": script}, "c": []any{}},
		map[string]any{"a": script},
		[]any{map[string]any{"a": map[string]any{"b": script}}},
	} {
		checkEncodeYAML(t, v)
	}
}

// TestEncodeYAMLRandom and FuzzEncodeYAML: random trees, with text of
// every shape where the fast path looks for it, and keys that sort in the
// encoder's natural order (digits, zeros, letters of other scripts).
func TestEncodeYAMLRandom(t *testing.T) {
	for seed := range uint64(1000) {
		checkEncodeYAML(t, randomTree(rand.New(rand.NewPCG(seed, 1))))
	}
}

// TestYAMLKeyOrder: keys in every order yamlKeyLess tells apart, each
// the key of a block, so that the fast path places every one.
func TestYAMLKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	block := strings.Repeat("x\n", blockMin)
	for range 2000 {
		m := map[string]any{}
		for range 2 + r.IntN(4) {
			m[randomKey(r)] = block
		}
		checkEncodeYAML(t, map[string]any{"data": m})
	}
}

func FuzzEncodeYAML(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		checkEncodeYAML(t, randomTree(rand.New(rand.NewPCG(seed, 1))))
	})
}

// randomTree is a root map whose maps hold long texts, some of them
// blocks.
func randomTree(r *rand.Rand) map[string]any {
	root := map[string]any{}
	for range 1 + r.IntN(5) {
		if r.IntN(3) == 0 {
			root[randomKey(r)] = randomValue(r, 2)
			continue
		}
		m := map[string]any{}
		for range r.IntN(8) {
			m[randomKey(r)] = randomValue(r, 1)
		}
		root[randomKey(r)] = m
	}
	return root
}

func randomKey(r *rand.Rand) string {
	runes := []string{"a", "b", "z", "A", "Z", "0", "0", "1", "2", "9", "_", "-", ".", "é", "ß", "٣", "Ⅻ", " ", ":", "/"}
	if r.IntN(20) == 0 {
		return []string{"true", "1e3", "null", "~", "-", "<<", "", strings.Repeat("k", 130)}[r.IntN(8)]
	}
	var b strings.Builder
	for range 1 + r.IntN(4) {
		b.WriteString(runes[r.IntN(len(runes))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(12); {
	case n < 6:
		return randomText(r)
	case n == 6:
		return int64(r.IntN(100))
	case n == 7:
		return []any{nil, true, 1.5, "x"}[r.IntN(4)]
	case depth > 0 && n < 10:
		m := map[string]any{}
		for range r.IntN(3) {
			m[randomKey(r)] = randomValue(r, depth-1)
		}
		return m
	case depth > 0:
		return []any{randomValue(r, depth-1), randomText(r)}
	}
	return "plain"
}

// randomText is a text of lines, long or short, that the encoder writes
// as a literal block or not.
func randomText(r *rand.Rand) string {
	lines := []string{"#!/bin/sh", "", "  indented: {a} [b] # c", "echo \"$x\" 'y' & * ! | > % @ `", "---", "- item", "key: value", "x y"}
	var b strings.Builder
	size := []int{10, 200, blockMin - 20, blockMin, 3 * blockMin}[r.IntN(5)]
	for b.Len() < size {
		b.WriteString(lines[r.IntN(len(lines))])
		b.WriteString("\n")
	}
	s := b.String()
	switch r.IntN(10) {
	case 0:
		s = " " + s
	case 1:
		s += "\n"
	case 2:
		s = strings.TrimSuffix(s, "\n")
	case 3:
		s = strings.Replace(s, "\n", " \n", 1)
	case 4:
		s = strings.Replace(s, "x", "\t", 1)
	case 5:
		s = strings.Replace(s, "x", "é", 1)
	case 6:
		s = "\n" + s
	}
	return s
}

// TestYAMLKey: the keys plainKey passes are written as they are.
func TestYAMLKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	keys := []string{"data", "mpi.sh", "a", "Z", "y", "Yes", "yEs", "NULL", "null1", "On", "off", "True", "a:b", "a b", "a-", "a_1/B.c",
		"é", "_a", "1a", "-a", "~", strings.Repeat("k", 128), strings.Repeat("k", 129)}
	for range 2000 {
		keys = append(keys, randomKey(r))
	}
	letters := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-:# "
	for range 2000 {
		k := make([]byte, 1+r.IntN(6))
		for i := range k {
			k[i] = letters[r.IntN(len(letters))]
		}
		keys = append(keys, string(k))
	}
	for _, k := range keys {
		got, gotOK := yamlKey(k)
		want, wantOK := encodedKey(k)
		if got != want || gotOK != wantOK {
			t.Errorf("key %q: %q %v, the encoder writes %q %v", k, got, gotOK, want, wantOK)
		}
	}
}

// TestEncodeYAML11: the strings YAML 1.1 readers would misread are
// double-quoted wherever they are, beside blocks too; the JSON encoder
// sees them as the strings they are.
func TestEncodeYAML11(t *testing.T) {
	script := strings.Repeat("echo hi\n", blockMin/8)
	tree := map[string]any{
		"a": "1_0.5", "b": []any{"=", "x", "2001-12-14 21:59:43.10 -5"},
		"data": map[string]any{"s": script, "v": "<<", "w": "1.10"},
	}
	if !Prepare(tree) {
		t.Fatal("no string to quote found")
	}
	want := "a: \"1_0.5\"\nb:\n- \"=\"\n- x\n- \"2001-12-14 21:59:43.10 -5\"\ndata:\n  s: |\n" +
		strings.Repeat("    echo hi\n", blockMin/8) + "  v: \"<<\"\n  w: \"1.10\"\n"
	got, err := Document(tree, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	j, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"1_0.5","b":["=","x","2001-12-14 21:59:43.10 -5"],"data":{"s":"` + strings.Repeat(`echo hi\n`, blockMin/8) + `","v":"\u003c\u003c","w":"1.10"}}`; string(j) != want {
		t.Errorf("JSON: %s", j)
	}
}

package yamlenc

import (
	"bytes"
	"slices"
	"strings"
	"unicode"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Document writes a decoded object (maps, lists, strings, int64,
// float64, bools, nil) as one YAML document: as go.yaml.in/yaml/v2 writes
// it, and the strings YAML 1.1 readers would misread double-quoted (when
// quoted says there are some: yaml11.go).
//
// It is the one seam of the YAML output, and it has one fast path: the
// encoder writes a scalar character by character (8 ms for a hostfile of
// 10,000 lines, more than the rest of the job), so a long text that it
// would write as a plain literal block (see isBlock) in a map under the
// root, such as a file in a ConfigMap's data, is written here, line by
// line. The rest of the document is the encoder's: a map that holds such
// text is written entry by entry in the encoder's key order, with each
// run of other entries written by the encoder in its place.
// TestEncodeYAML and FuzzEncodeYAML hold the result to the encoder's
// bytes; BenchmarkEncodeYAMLBlocks shows what the fast path saves.
func Document(v any, quoted bool) ([]byte, error) {
	var y []byte
	var err error
	root, _ := v.(map[string]any)
	if blocks, size := blocksIn(root); blocks != nil {
		y, err = blocksYAML(root, blocks, size)
	} else {
		y, err = yamlv2.Marshal(v)
	}
	if err != nil || !quoted {
		return y, err
	}
	return unquoteYAML11(y)
}

// blockMin is the length from which Document writes a literal block
// itself: below it the encoder is quick enough.
const blockMin = 1024

// isBlock reports whether the encoder writes s as a literal block of its
// lines under the key, "|" and nothing else: s holds printable ASCII and
// line breaks only, neither starts with a space or a break nor ends with
// two breaks (those get indicators), and no line ends with a space (that
// makes the encoder quote the whole text). Long texts only: blockMin.
func isBlock(s string) bool {
	n := len(s)
	if n < blockMin || s[0] == ' ' || s[0] == '\n' || s[n-1] != '\n' || s[n-2] == '\n' {
		return false
	}
	for i := 0; i < n; i++ {
		if !blockByte[s[i]] {
			return false
		}
	}
	return !strings.Contains(s, " \n")
}

// blockByte: the bytes of a block, printable ASCII and the line break.
var blockByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = true
	}
	t['\n'] = true
	return t
}()

// blocksIn finds the blocks Document writes itself: by key of root, the
// keys of the map there whose values are blocks (nil if none), and about
// how many bytes the document takes.
func blocksIn(root map[string]any) (map[string]map[string]bool, int) {
	var blocks map[string]map[string]bool
	size := 4096 // the blocks, indented, and room for the rest
	for k, v := range root {
		m, _ := v.(map[string]any)
		for k2, e := range m {
			if s, ok := e.(string); ok && isBlock(s) {
				if blocks == nil {
					blocks = map[string]map[string]bool{}
				}
				if blocks[k] == nil {
					blocks[k] = map[string]bool{}
				}
				blocks[k][k2] = true
				size += len(s) + len(s)/4
			}
		}
	}
	return blocks, size
}

// blocksYAML is Document of a root that holds blocks.
func blocksYAML(root map[string]any, blocks map[string]map[string]bool, size int) ([]byte, error) {
	keys, ordered := yamlKeys(root)
	if !ordered {
		return yamlv2.Marshal(root)
	}
	out := make([]byte, 0, size)
	run := map[string]any{} // entries of root the encoder writes
	for _, k := range keys {
		ok := blocks[k] != nil
		var key string
		var keys2 []string
		if ok {
			key, ok = yamlKey(k)
		}
		if ok {
			keys2, ok = yamlKeys(root[k].(map[string]any))
		}
		if !ok {
			run[k] = root[k]
			continue
		}
		var err error
		if out, err = appendRun(out, run); err != nil {
			return nil, err
		}
		run = map[string]any{}
		out = append(append(out, key...), ":\n"...)
		m := root[k].(map[string]any)
		inner := map[string]any{} // entries of m the encoder writes
		for _, k2 := range keys2 {
			key2, ok := "", blocks[k][k2]
			if ok {
				key2, ok = yamlKey(k2)
			}
			if !ok {
				inner[k2] = m[k2]
				continue
			}
			if out, err = appendRun(out, inner, k); err != nil {
				return nil, err
			}
			inner = map[string]any{}
			out = append(append(append(out, "  "...), key2...), ": |\n"...)
			out = appendBlock(out, m[k2].(string), "    ")
		}
		if out, err = appendRun(out, inner, k); err != nil {
			return nil, err
		}
	}
	return appendRun(out, run)
}

// appendRun appends the entries as the encoder writes them: at the root,
// or with under as the entries of the map under the root's key under[0]
// (the encoder writes that key's line too, which is dropped).
func appendRun(out []byte, entries map[string]any, under ...string) ([]byte, error) {
	if len(entries) == 0 {
		return out, nil
	}
	var v any = entries
	if len(under) > 0 {
		v = map[string]any{under[0]: entries}
	}
	y, err := yamlv2.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(under) > 0 {
		_, y, _ = bytes.Cut(y, []byte("\n"))
	}
	return append(out, y...), nil
}

// appendBlock appends the lines of s (isBlock), each indented but the
// empty ones.
func appendBlock(out []byte, s, indent string) []byte {
	for s != "" {
		end := strings.IndexByte(s, '\n') + 1 // s ends with a break
		if end > 1 {
			out = append(out, indent...)
		}
		out = append(out, s[:end]...)
		s = s[end:]
	}
	return out
}

// yamlKey is k as the encoder writes a key, and false when that is not
// one line "key: value" (a long key is written "? key").
func yamlKey(k string) (string, bool) {
	if plainKey(k) {
		return k, true
	}
	return encodedKey(k)
}

// plainKey reports whether the encoder writes the key k as it is: an
// ASCII letter, then letters, digits and ._/-, at most 128 bytes, and no
// word YAML reads as a bool or null. (TestYAMLKey holds it to the
// encoder.)
func plainKey(k string) bool {
	if len(k) == 0 || len(k) > 128 || !('a' <= k[0]|0x20 && k[0]|0x20 <= 'z') {
		return false
	}
	for i := 1; i < len(k); i++ {
		switch c := k[i]; {
		case 'a' <= c|0x20 && c|0x20 <= 'z', '0' <= c && c <= '9', c == '.', c == '_', c == '/', c == '-':
		default:
			return false
		}
	}
	switch strings.ToLower(k) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// encodedKey is yamlKey, from the encoder.
func encodedKey(k string) (string, bool) {
	y, err := yamlv2.Marshal(map[string]any{k: nil})
	if err != nil {
		return "", false
	}
	key, ok := strings.CutSuffix(string(y), ": null\n")
	return key, ok && !strings.Contains(key, "\n")
}

// yamlKeys are the keys of m in the order the encoder writes them, and
// false when its order is not one order of these keys (yamlKeyLess is not
// transitive: 2a < 9 < 21 < 2a), so that the order it writes them in
// depends on the order it finds them in.
func yamlKeys(m map[string]any) ([]string, bool) {
	keys := make([][]rune, 0, len(m))
	for k := range m {
		keys = append(keys, []rune(k))
	}
	slices.SortFunc(keys, func(a, b []rune) int {
		switch {
		case yamlKeyLess(a, b):
			return -1
		case yamlKeyLess(b, a):
			return 1
		}
		return 0
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		for _, later := range keys[i+1:] {
			if !yamlKeyLess(k, later) {
				return nil, false
			}
		}
		out[i] = string(k)
	}
	return out, true
}

// yamlKeyLess is the encoder's order of keys, a natural order: at the
// first rune where a and b differ, two letters are in rune order and a
// letter comes after any other rune; otherwise the numbers that the
// digits from there make are compared, then the lengths of those digits,
// then the runes. Zeros after an earlier digit other than 0 are part of a
// number (a10 < a100), leading zeros are not (a01 and a1 are the same
// number, the shorter first). A string is before the longer strings it
// starts.
func yamlKeyLess(ar, br []rune) bool {
	for i := 0; i < len(ar) && i < len(br); i++ {
		x, y := ar[i], br[i]
		if x == y {
			continue
		}
		xLetter, yLetter := unicode.IsLetter(x), unicode.IsLetter(y)
		switch {
		case xLetter && yLetter:
			return x < y
		case xLetter || yLetter:
			return yLetter
		}
		var start int64
		if x == '0' || y == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					start = 1 // inside a number
					break
				}
			}
		}
		xn, xEnd := number(ar, i, start)
		yn, yEnd := number(br, i, start)
		switch {
		case xn != yn:
			return xn < yn
		case xEnd != yEnd:
			return xEnd < yEnd
		}
		return x < y
	}
	return len(ar) < len(br)
}

// number reads the digits of r from i, after the value n so far: the
// number and where the digits end.
func number(r []rune, i int, n int64) (int64, int) {
	for ; i < len(r) && unicode.IsDigit(r[i]); i++ {
		n = n*10 + int64(r[i]-'0')
	}
	return n, i
}

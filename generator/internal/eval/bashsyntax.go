package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/internal/dollar"
)

// bashSyntax(cmd) is the native behind roles.bashSyntax: the first
// construct of bash that POSIX sh (dash, busybox) lacks in the command cmd,
// said in words ("[[ ]] is bash syntax (sh has [ ])"), or null. Commands
// run with sh -c, while the Helm charts ran theirs with bash -c; what is
// looked for is what those commands used: [[ ]] tests, source, function,
// arrays, brace ranges {1..4}, process substitution, &> and |&
// redirections, (( )) arithmetic commands, ${var/pattern/...} and
// ${var:offset}. A heuristic, for warnings (and horovod's choice of bash
// for the chart's args). In Go because it scans text: the same scan in
// Jsonnet, char by char, cost 40 ms a render.
func bashSyntaxNative(args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	cmd, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("bashSyntax(cmd) wants a string or null")
	}
	if what := bashSyntax(dollar.Unmark(cmd)); what != "" { // the user's $ (generator/internal/dollar)
		return what, nil
	}
	return nil, nil
}

func bashSyntax(cmd string) string {
	if cmd == "" {
		return ""
	}
	before := func(i int) byte {
		if i == 0 {
			return 0
		}
		return cmd[i-1]
	}
	// i starts a word: at the start, or after a blank or an operator
	wordStart := func(i int) bool { return i == 0 || strings.IndexByte(" \t\n;&|(`!", cmd[i-1]) >= 0 }
	// i starts a command: the previous word is an operator or a keyword
	commandStart := func(i int) bool {
		head := strings.TrimRight(cmd[:i], " \t")
		if head == "" || strings.IndexByte(";&|({`\n", head[len(head)-1]) >= 0 {
			return true
		}
		words := strings.Split(strings.NewReplacer("\n", " ", "\t", " ").Replace(head), " ")
		return slices.Contains([]string{"if", "then", "else", "elif", "do", "while", "until", "!"}, words[len(words)-1])
	}
	at := func(sub string, ok func(int) bool) bool {
		for i := 0; ; {
			j := strings.Index(cmd[i:], sub)
			if j < 0 {
				return false
			}
			if ok(i + j) {
				return true
			}
			i += j + 1
		}
	}
	// {a..b}: a brace holding .. and no blank
	rangeBrace := false
	for _, piece := range strings.Split(cmd, "{")[1:] {
		if b, _, closed := strings.Cut(piece, "}"); closed && strings.Contains(b, "..") && !strings.Contains(b, " ") && len(b) <= 24 {
			rangeBrace = true
			break
		}
	}
	isName := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
	}
	// ${name/...} and ${name:digit}
	bashExpansion := false
	for _, e := range strings.Split(cmd, "${")[1:] {
		k := 0
		for k < len(e) && isName(e[k]) {
			k++
		}
		if k > 0 && k < len(e) && (e[k] == '/' || e[k] == ':' && k+1 < len(e) && strings.IndexByte("0123456789 ", e[k+1]) >= 0) {
			bashExpansion = true
			break
		}
	}
	// name=( where name is a whole word: an array
	isArray := func(i int) bool {
		ws := strings.Split(strings.NewReplacer(";", " ", "\n", " ").Replace(cmd[:i]), " ")
		w := ws[len(ws)-1]
		if w == "" {
			return false
		}
		for j := 0; j < len(w); j++ {
			if !isName(w[j]) {
				return false
			}
		}
		return true
	}
	switch {
	case at("[[ ", wordStart):
		return "[[ ]] is bash syntax (sh has [ ])"
	case at("source ", commandStart):
		return "source is bash syntax (sh has . FILE)"
	case at("function ", commandStart):
		return "function NAME is bash syntax (sh has NAME() { ...; })"
	case at("=(", isArray):
		return "an array, name=(...), is bash syntax (sh has none)"
	case rangeBrace:
		return "a brace range such as {1..4} is bash syntax (sh has $(seq 1 4))"
	case at("<(", wordStart) || at(">(", wordStart):
		return "process substitution, <(...) or >(...), is bash syntax (sh has pipes and files)"
	case at("&>", func(i int) bool { return before(i) != '>' && before(i) != '&' }):
		return "&> is bash syntax (sh has > FILE 2>&1; in sh, &> runs the command in the background)"
	case strings.Contains(cmd, "|&"):
		return "|& is bash syntax (sh has 2>&1 |)"
	case at("((", func(i int) bool { return before(i) != '$' && before(i) != '(' && commandStart(i) }):
		return "(( )) is bash syntax (sh has [ $(( ... )) -ne 0 ])"
	case bashExpansion:
		return "${var/pattern/...} and ${var:offset} are bash syntax (sh has neither)"
	}
	return ""
}

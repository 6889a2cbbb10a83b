package cli

import (
	"slices"
	"strings"
	"unicode"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// How parameters are spelled on the command line. The generator knows a
// parameter by its declared path, its aliases and the replaced system's
// paths; the flags and the kebab-case form are this package's.

// flagName is a parameter's primary flag, without dashes: the kebab-case
// form of its path, "node-selector" for "nodeSelector", "ssh-port" for
// "ssh.port".
func flagName(p *param.Param) string { return kebab(p.Path) }

// flagNames is every flag spelling of a parameter, without dashes: the
// kebab-case form first, then the declared path ("nodeSelector",
// "ssh.port"), the aliases, and the paths the replaced system used.
func flagNames(p *param.Param) []string {
	names := []string{flagName(p)}
	for _, n := range append(append([]string{p.Path}, p.Aliases...), p.OldPaths...) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// typeName is the short type shown in flag help and describe: "int",
// "quantity", "map[string]string", "[]Volume".
func typeName(p *param.Param) string {
	switch p.Type {
	case param.TypeObject:
		k := p.Kind[strings.LastIndex(p.Kind, ".")+1:]
		if p.List {
			return "[]" + k
		}
		return k
	case param.TypeMap:
		if p.ValueFormat == "quantity" {
			return "map[string]quantity"
		}
		return "map[string]string"
	case param.TypeList:
		if p.Format == "int" {
			return "[]int"
		}
		return "[]string"
	case param.TypeDuration:
		return "seconds"
	}
	return string(p.Type)
}

// kebab turns a dotted camelCase path into kebab-case:
// "worker.podManagementPolicy" becomes "worker-pod-management-policy" and
// "useHostPID" "use-host-pid".
func kebab(path string) string {
	var b strings.Builder
	rs := []rune(path)
	for i, r := range rs {
		switch {
		case r == '.' || r == '_':
			b.WriteByte('-')
			continue
		case unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])
			if prevLower || nextLower {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

package generator

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-jsonnet/ast"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// tla is the prototype's params argument (vm.TLANode): the resolved
// values of every parameter as a Jsonnet AST of literals, the same value
// TLACode would get from their JSON, without printing and re-parsing that
// JSON on every render. Every $ of a value an input set is written as
// dollarMark on the way (kubeletexpand.go), so that it travels with the
// user's text through any Jsonnet; dollars reports whether there was any.
// Text that holds the mark itself is refused (problems).
func (r *resolved) tla(pr *Prototype) (node ast.Node, dollars bool, problems []*param.Error, err error) {
	var group func(values map[string]any, ps []*param.Param) (ast.Node, error)
	group = func(values map[string]any, ps []*param.Param) (ast.Node, error) {
		obj := &ast.DesugaredObject{Fields: make(ast.DesugaredObjectFields, 0, len(ps))}
		for _, p := range ps { // sorted by name, as paramsNode sorts keys
			v := values[p.Name]
			var body ast.Node
			var err error
			switch {
			case p.Type == param.TypeGroup:
				m, _ := v.(map[string]any)
				body, err = group(m, p.Params)
			case r.given[p.Path] != "" && holdsText(v, "$"+dollarMark):
				if holdsText(v, dollarMark) {
					problems = append(problems, &param.Error{Param: p.Path, Source: r.given[p.Path], Value: param.Show(v),
						Rule: "holds U+FDD0, a Unicode noncharacter that trainsonnet keeps for itself"})
					continue
				}
				dollars = true
				body, err = paramsNode(mark(v))
			default:
				body, err = paramsNode(v)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			obj.Fields = append(obj.Fields, ast.DesugaredObjectField{
				Hide: ast.ObjectFieldInherit,
				Name: &ast.LiteralString{Value: p.Name, Kind: ast.StringDouble},
				Body: body,
			})
		}
		return obj, nil
	}
	node, err = group(r.values, pr.Params)
	if len(problems) > 0 {
		return nil, false, problems, nil
	}
	return node, dollars, nil, err
}

// paramsNode turns a checked value into a Jsonnet AST of literals.
func paramsNode(v any) (ast.Node, error) {
	switch x := v.(type) {
	case nil:
		return &ast.LiteralNull{}, nil
	case bool:
		return &ast.LiteralBoolean{Value: x}, nil
	case string:
		return &ast.LiteralString{Value: x, Kind: ast.StringDouble}, nil
	case int64:
		return &ast.LiteralNumber{OriginalString: strconv.FormatInt(x, 10)}, nil
	case int:
		return &ast.LiteralNumber{OriginalString: strconv.Itoa(x)}, nil
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return nil, fmt.Errorf("bad number %q", x)
		}
		return &ast.LiteralNumber{OriginalString: string(x)}, nil
	case map[string]any:
		return objectNode(len(x), slices.Sorted(maps.Keys(x)), func(k string) any { return x[k] })
	case map[string]string:
		return objectNode(len(x), slices.Sorted(maps.Keys(x)), func(k string) any { return x[k] })
	case []any:
		return arrayNode(len(x), func(i int) any { return x[i] })
	case []string:
		return arrayNode(len(x), func(i int) any { return x[i] })
	case []int64:
		return arrayNode(len(x), func(i int) any { return x[i] })
	}
	return nil, fmt.Errorf("no Jsonnet literal for a %T", v)
}

func objectNode(n int, keys []string, get func(string) any) (ast.Node, error) {
	obj := &ast.DesugaredObject{Fields: make(ast.DesugaredObjectFields, 0, n)}
	for _, k := range keys {
		body, err := paramsNode(get(k))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		obj.Fields = append(obj.Fields, ast.DesugaredObjectField{
			Hide: ast.ObjectFieldInherit,
			Name: &ast.LiteralString{Value: k, Kind: ast.StringDouble},
			Body: body,
		})
	}
	return obj, nil
}

func arrayNode(n int, get func(int) any) (ast.Node, error) {
	arr := &ast.Array{Elements: make([]ast.CommaSeparatedExpr, 0, n)}
	for i := 0; i < n; i++ {
		el, err := paramsNode(get(i))
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		arr.Elements = append(arr.Elements, ast.CommaSeparatedExpr{Expr: el})
	}
	return arr, nil
}

// holdsText reports whether a string in v holds any of the runes of set.
func holdsText(v any, set string) bool {
	switch x := v.(type) {
	case string:
		return strings.ContainsAny(x, set)
	case map[string]string:
		for _, e := range x {
			if strings.ContainsAny(e, set) {
				return true
			}
		}
	case []string:
		for _, e := range x {
			if strings.ContainsAny(e, set) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if holdsText(e, set) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsText(e, set) {
				return true
			}
		}
	}
	return false
}

// mark copies v with every $ of its strings (not of map keys, which are
// names) replaced by dollarMark.
func mark(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "$", dollarMark)
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = strings.ReplaceAll(e, "$", dollarMark)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = strings.ReplaceAll(e, "$", dollarMark)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = mark(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mark(e)
		}
		return out
	}
	return v
}

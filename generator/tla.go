package generator

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/google/go-jsonnet/ast"
)

// paramsNode turns checked parameter values into a Jsonnet AST of literals,
// passed to the prototype as its params argument (vm.TLANode). It is the
// same value TLACode would get from the values' JSON, without printing and
// re-parsing that JSON on every render.
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

package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/google/go-jsonnet/ast"
)

// Value is a prototype's argument (its params, or what a from function
// reads): a Jsonnet AST of literals, the same value TLACode would get from
// its JSON, without printing and parsing that JSON on every render.
type Value struct{ node ast.Node }

// Empty is the empty object: the params of a prototype's declaration.
func Empty() Value { return Value{&ast.DesugaredObject{}} }

// Literal is the Value of a checked Go value: nil, bool, string, int,
// int64, json.Number, map[string]any or map[string]string (keys sorted),
// []any, []string, []int64.
func Literal(v any) (Value, error) {
	n, err := paramsNode(v)
	return Value{n}, err
}

// Object is the object of the given fields, in that order.
func Object(names []string, values []Value) Value {
	obj := &ast.DesugaredObject{Fields: make(ast.DesugaredObjectFields, 0, len(names))}
	for i, name := range names {
		obj.Fields = append(obj.Fields, field(name, values[i].node))
	}
	return Value{obj}
}

func field(name string, body ast.Node) ast.DesugaredObjectField {
	return ast.DesugaredObjectField{
		Hide: ast.ObjectFieldInherit,
		Name: &ast.LiteralString{Value: name, Kind: ast.StringDouble},
		Body: body,
	}
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
		obj.Fields = append(obj.Fields, field(k, body))
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

package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// reservedFlags are gen's own flags; a prototype may not declare them.
var reservedFlags = map[string]bool{"values": true, "set": true, "output": true, "output-dir": true, "prototype-path": true, "help": true}

// paramFlag collects the raw text given to one spelling of a parameter's
// flag. Text is parsed by the declared type only after all flags are read,
// so that every bad value is reported at once, by the generator's rules.
type paramFlag struct {
	param  *param.Param
	name   string
	values []string
}

func (f *paramFlag) Set(v string) error { f.values = append(f.values, v); return nil }
func (f *paramFlag) Type() string       { return typeName(f.param) }
func (f *paramFlag) String() string     { return defaultText(f.param) }

// IsBoolFlag lets pflag accept --flag without a value for bool parameters.
func (f *paramFlag) IsBoolFlag() bool { return f.param.Type == param.TypeBool }

type paramFlags struct {
	byParam map[*param.Param][]*paramFlag // every spelling of each parameter
	order   []*param.Param
	removed []*removedFlag // the replaced system's keys that are gone
}

// removedFlag is a key of the replaced system that trainsonnet no longer
// takes (a prototype's removed map), as a hidden flag: --controllerImage
// gets the warning that says what to do instead, as in a params file,
// rather than "unknown flag".
type removedFlag struct {
	key    string
	name   string
	values []string
}

func (f *removedFlag) Set(v string) error { f.values = append(f.values, v); return nil }
func (f *removedFlag) Type() string       { return "string" }
func (f *removedFlag) String() string     { return "" }

// addParamFlags registers every spelling of every parameter: the
// kebab-case flag shown in help, and the declared spelling and aliases as
// hidden synonyms (--nodeSelector, --ssh.port, --secret).
func addParamFlags(fs *pflag.FlagSet, proto *generator.Prototype) (*paramFlags, error) {
	pf := &paramFlags{byParam: map[*param.Param][]*paramFlag{}}
	for _, p := range param.Leaves(proto.Params) {
		pf.order = append(pf.order, p)
		for i, n := range flagNames(p) {
			if reservedFlags[n] {
				return nil, fmt.Errorf("prototype %s declares --%s, which is one of gen's own flags", proto.Name, n)
			}
			if other := fs.Lookup(n); other != nil {
				if of, ok := other.Value.(*paramFlag); ok {
					return nil, fmt.Errorf("prototype %s: flag --%s would mean both %q and %q", proto.Name, n, of.param.Path, p.Path)
				}
				return nil, fmt.Errorf("prototype %s declares --%s, which is one of gen's own flags", proto.Name, n)
			}
			f := &paramFlag{param: p, name: n}
			// pflag registers a shorthand when the flag is added, never
			// when the field is set afterwards.
			short := ""
			if p.Path == "namespace" && i == 0 {
				short = "n"
			}
			flag := fs.VarPF(f, n, short, usageText(p))
			if p.Type == param.TypeBool {
				flag.NoOptDefVal = "true"
			}
			if i > 0 {
				flag.Hidden = true
			}
			pf.byParam[p] = append(pf.byParam[p], f)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(proto.Removed)) {
		if fs.Lookup(key) != nil || reservedFlags[key] {
			continue
		}
		f := &removedFlag{key: key, name: key}
		fs.VarPF(f, key, "", "not used: "+proto.Removed[key]).Hidden = true
		pf.removed = append(pf.removed, f)
	}
	return pf, nil
}

// apply adds the flags that were given to params. Repeated map and list
// flags add up (a map key given twice is an error, in one text or two); a
// scalar flag given twice keeps the last value. Two
// spellings of one parameter are an error: which one wins would be a guess.
func (pf *paramFlags) apply(params *generator.Params) error {
	for _, p := range pf.order {
		var used []*paramFlag
		for _, f := range pf.byParam[p] {
			if len(f.values) > 0 {
				used = append(used, f)
			}
		}
		switch len(used) {
		case 0:
			continue
		case 1:
		default:
			return usagef("--%s and --%s both set %s; use one", used[0].name, used[1].name, p.Path)
		}
		f := used[0]
		key := p.Path // the flag of an alias names it: the replaced system's (--secret)
		if slices.Contains(p.Aliases, f.name) {
			key = f.name
		}
		params.SetTexts(key, f.values, "--"+f.name)
	}
	for _, f := range pf.removed {
		if len(f.values) > 0 {
			params.SetText(f.key, f.values[len(f.values)-1], "--"+f.name)
		}
	}
	return nil
}

func usageText(p *param.Param) string {
	u := p.Doc
	var also []string
	for _, n := range flagNames(p)[1:] {
		also = append(also, "--"+n)
	}
	if len(also) > 0 {
		u += " (also " + strings.Join(also, ", ") + ")"
	}
	return u
}

// defaultText shows a default the way a user would type it.
func defaultText(p *param.Param) string {
	switch d := p.Default.(type) {
	case nil:
		return ""
	case string:
		return d
	case map[string]string:
		if len(d) == 0 {
			return ""
		}
		keys := slices.Sorted(maps.Keys(d))
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + "=" + d[k]
		}
		return strings.Join(pairs, ",")
	case []string:
		return strings.Join(d, ",")
	case []int64:
		parts := make([]string, len(d))
		for i, n := range d {
			parts[i] = fmt.Sprint(n)
		}
		return strings.Join(parts, ",")
	case []any:
		if len(d) == 0 {
			return ""
		}
	}
	if p.Type == param.TypeObject {
		b, _ := json.Marshal(p.Default)
		return string(b)
	}
	return fmt.Sprint(p.Default)
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
	"github.com/trainsonnet/trainsonnet/generator/suggest"
)

const genUse = "gen <prototype> [parameter flags] [-f FILE]... [--set key=value]... [-o yaml|json] [--output-dir DIR]"

// genOptions are gen's own flags; the prototype's parameter flags are
// added to the same FlagSet once the prototype is known.
type genOptions struct {
	files          []string
	sets           []string
	output         *outputFormat
	outputDir      string
	prototypePaths []string
}

func (o *genOptions) register(fs *pflag.FlagSet) {
	o.output = newOutputFormat("yaml", "yaml", "json")
	fs.StringArrayVarP(&o.files, "values", "f", nil, "params file (YAML or JSON, declared camelCase keys); repeatable, later files win; - reads stdin")
	fs.StringArrayVar(&o.sets, "set", nil, "set a parameter by its declared path, such as --set ssh.port=2222 (repeatable; after -f, before parameter flags)")
	fs.VarP(o.output, "output", "o", "output format on stdout: yaml (a --- separated stream) or json (a v1 List)")
	fs.StringVar(&o.outputDir, "output-dir", "", "write a kustomize base to this directory instead of stdout (kustomization.yaml + <kind>_<name>.yaml), replacing a previous base there atomically")
	fs.StringArrayVarP(&o.prototypePaths, "prototype-path", "J", nil, "directory of prototypes and libraries of your own (repeatable)")
}

// genValueFlags are gen's own flags that take a value, for finding the
// prototype name among the arguments.
var genValueFlags = map[string]bool{"-f": true, "--values": true, "--set": true, "-o": true, "--output": true, "--output-dir": true, "-J": true, "--prototype-path": true}

func newGenCmd(root *rootOptions, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   genUse,
		Short: "Render a prototype's manifests (YAML, JSON or a kustomize base)",
		Long: `Render a prototype with typed parameters. Values come from, in order (a later
source replaces an earlier one's value of the same parameter): the prototype's
defaults, params files (-f, in order), --set (in order), then parameter flags.
Every parameter has a flag in kebab-case (--node-selector) and in its declared
spelling (--nodeSelector, --ssh.port); see 'trainsonnet describe <prototype>'.

stdout carries the manifests only; warnings go to stderr. Exit code 2 means bad
usage or invalid parameters (every problem is listed, nothing is written).`,
		Example: `  trainsonnet gen openmpi --name bench --workers 4 --gpu 1 > manifests.yaml
  trainsonnet gen openmpi -f params.yaml --set ssh.port=2222 -o json
  trainsonnet gen openmpi --name bench --output-dir overlays/base`,
		DisableFlagParsing: true,
		ValidArgsFunction:  completeGen(root),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGen(cmd.Context(), root, s, args)
		},
	}
	return cmd
}

// splitPrototype finds the prototype name: the first argument that is not
// one of gen's own flags or its value. Prototype flags cannot come before
// it, because they are not known until the prototype is.
func splitPrototype(args []string) (name string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			continue
		case genValueFlags[a]:
			i++ // skip its value
		case strings.HasPrefix(a, "-"):
			flag, _, _ := strings.Cut(a, "=")
			if !genValueFlags[flag] && a != "-h" && a != "--help" {
				return "", nil, usagef("%s comes before the prototype's name; write: trainsonnet gen <prototype> %s ...", a, a)
			}
		default:
			rest = append(append([]string{}, args[:i]...), args[i+1:]...)
			return a, rest, nil
		}
	}
	return "", args, nil
}

func runGen(ctx context.Context, root *rootOptions, s Streams, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	name, rest, err := splitPrototype(args)
	if err != nil {
		return err
	}
	// gen's own flags first, to learn -J before looking the prototype up.
	opts := &genOptions{}
	pre := pflag.NewFlagSet("gen", pflag.ContinueOnError)
	pre.ParseErrorsAllowlist.UnknownFlags = true
	pre.SetOutput(discard{})
	opts.register(pre)
	pre.BoolP("help", "h", false, "help")
	_ = pre.Parse(rest) // errors are reported by the full parse below
	root.prototypePaths = append(root.prototypePaths, opts.prototypePaths...)
	g, err := root.generator()
	if err != nil {
		return err
	}
	if name == "" {
		if help, _ := pre.GetBool("help"); help {
			return printGenHelp(s, g, nil, nil)
		}
		return usagef("which prototype? trainsonnet gen <prototype>; prototypes: %s", strings.Join(g.Names(), ", "))
	}
	proto, err := g.Lookup(name)
	if err != nil {
		return err
	}

	opts = &genOptions{}
	fs := pflag.NewFlagSet("gen "+name, pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.SortFlags = false
	opts.register(fs)
	help := fs.BoolP("help", "h", false, "help for gen "+name)
	pflags, err := addParamFlags(fs, proto)
	if err != nil {
		return err
	}
	if err := fs.Parse(rest); err != nil {
		return flagError(err, fs)
	}
	if *help {
		return printGenHelp(s, g, proto, fs)
	}
	if fs.NArg() > 0 {
		return unexpectedArg(fs.Arg(0), rest)
	}
	if opts.outputDir != "" && fs.Changed("output") && opts.output.value != "yaml" {
		return usagef("--output-dir writes a kustomize base (YAML); it cannot be combined with -o %s", opts.output.value)
	}
	if opts.outputDir != "" {
		if err := checkOutputDir(opts.outputDir); err != nil {
			return err
		}
	}

	params := generator.NewParams(name)
	for _, f := range opts.files {
		data, err := readFile(f, s.In)
		if err != nil {
			return usagef("--values %s: %v", f, errors.Unwrap(err))
		}
		params.AddFile(f, data)
	}
	for _, kv := range opts.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef("--set %q: must be key=value, such as --set ssh.port=2222", kv)
		}
		key := k
		if p := paramByFlag(proto, k); p != nil && k == flagName(p) {
			key = p.Path // the generator knows declared names, not flags
		}
		params.SetText(key, v, "--set "+k)
	}
	if err := pflags.apply(params); err != nil {
		return err
	}

	res, err := g.Render(ctx, params)
	if err != nil {
		nameByFlag(proto, err)
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(s.Err, "warning: "+w)
	}
	if opts.outputDir != "" {
		files, err := res.KustomizeBase()
		if err != nil {
			return err
		}
		return writeDir(opts.outputDir, files)
	}
	var out []byte
	if opts.output.value == "json" {
		out, err = res.JSON()
	} else {
		out, err = res.YAML()
	}
	if err != nil {
		return err
	}
	_, err = s.Out.Write(out)
	return err
}

// unexpectedArg explains a stray argument; the usual one is the value of a
// bool flag written with a space (--use-host-network false), which pflag
// cannot take.
func unexpectedArg(arg string, args []string) error {
	if arg == "true" || arg == "false" {
		for i := 1; i < len(args); i++ {
			if args[i] == arg && strings.HasPrefix(args[i-1], "--") {
				return usagef("unexpected argument %q: write bool flags with =, as %s=%s", arg, args[i-1], arg)
			}
		}
	}
	return usagef("unexpected argument %q after the prototype's name (parameters are flags: --name NAME)", arg)
}

// flagError turns pflag's parse errors into usage errors, suggesting the
// closest flag for an unknown one.
func flagError(err error, fs *pflag.FlagSet) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		// every spelling a flag takes, each standing for its visible
		// name; not the keys a prototype ignores (removed), which a
		// suggestion would only lead to a warning
		var names []string
		shown := map[string]string{}
		visible := map[*param.Param]string{}
		fs.VisitAll(func(f *pflag.Flag) {
			if pf, ok := f.Value.(*paramFlag); ok && !f.Hidden {
				visible[pf.param] = f.Name
			}
		})
		fs.VisitAll(func(f *pflag.Flag) {
			switch v := f.Value.(type) {
			case *removedFlag:
				return
			case *paramFlag:
				shown[f.Name] = visible[v.param]
			default:
				shown[f.Name] = f.Name
			}
			if shown[f.Name] == "" {
				shown[f.Name] = f.Name
			}
			names = append(names, f.Name)
		})
		if s := suggest.Closest(name, names); s != "" {
			return usagef("unknown flag --%s (did you mean --%s?)", name, shown[s])
		}
		return usagef("unknown flag --%s (see trainsonnet gen %s --help)", name, strings.TrimPrefix(fs.Name(), "gen "))
	}
	return usagef("%s", msg)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// completeGen completes prototype names, then the prototype's flags and
// the values of enum and bool parameters.
func completeGen(root *rootOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		g, err := root.generator()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		name, _, _ := splitPrototype(args)
		if name == "" {
			if strings.HasPrefix(toComplete, "-") {
				return genFlagCompletions(nil), cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, n := range g.Names() {
				if p, err := g.Lookup(n); err == nil {
					out = append(out, cobra.CompletionWithDesc(n, p.Summary))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		proto, err := g.Lookup(name)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		if len(args) > 0 {
			switch last := args[len(args)-1]; last {
			case "-f", "--values", "--output-dir":
				return nil, cobra.ShellCompDirectiveDefault
			case "-o", "--output":
				return []cobra.Completion{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp
			default:
				if p := paramByFlag(proto, strings.TrimLeft(last, "-")); p != nil && strings.HasPrefix(last, "--") {
					switch p.Type {
					case param.TypeEnum:
						return p.Values, cobra.ShellCompDirectiveNoFileComp
					case param.TypeBool:
					default:
						return nil, cobra.ShellCompDirectiveNoFileComp
					}
				}
			}
		}
		if strings.HasPrefix(toComplete, "-") {
			return genFlagCompletions(proto), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

func genFlagCompletions(proto *generator.Prototype) []cobra.Completion {
	out := []cobra.Completion{
		cobra.CompletionWithDesc("--values", "params file"),
		cobra.CompletionWithDesc("--set", "set a parameter: key=value"),
		cobra.CompletionWithDesc("--output", "yaml or json"),
		cobra.CompletionWithDesc("--output-dir", "write a kustomize base"),
	}
	if proto == nil {
		return out
	}
	var ps []cobra.Completion
	for _, p := range param.Leaves(proto.Params) {
		for _, n := range flagNames(p) {
			ps = append(ps, cobra.CompletionWithDesc("--"+n, firstSentence(p.Doc)))
		}
	}
	sort.Strings(ps)
	return append(ps, out...)
}

func paramByFlag(proto *generator.Prototype, flag string) *param.Param {
	for _, p := range param.Leaves(proto.Params) {
		for _, n := range flagNames(p) {
			if n == flag {
				return p
			}
		}
	}
	return nil
}

// nameByFlag labels the problems of a validation error that no input
// caused (a rule broken by a default) by the parameter's flag, the
// spelling a user of the command line would change.
func nameByFlag(proto *generator.Prototype, err error) {
	var verr *generator.ValidationError
	if !errors.As(err, &verr) {
		return
	}
	for _, pe := range verr.Problems {
		if p := proto.Param(pe.Param); p != nil && pe.Source == "" {
			pe.Source = "--" + flagName(p)
		}
	}
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

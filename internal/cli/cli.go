// Package cli is trainsonnet's command tree: gen, batch, list, describe,
// schema, completion and version. Run holds all of it behind injected
// streams, so tests drive the real commands in-process; only main exits.
//
// A prototype's flags are built from its declarations at run time
// (paramflags.go), with every spelling of a parameter on the command line
// (spelling.go: the kebab-case flag, the hidden synonyms such as the
// ksonnet names, the type shown in help); the generator knows only the
// declared names. --output-dir is written atomically (outdir.go): a base
// is replaced in one step, only what trainsonnet wrote is replaced, and a
// symlink given as the directory is followed. Exit codes: 0 done, 2 the
// user's input (one line a problem, nothing written), 1 anything else (a
// prototype's bug, an I/O error).
package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trainsonnet/trainsonnet/generator"
)

// Exit codes.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // anything else went wrong (a prototype bug, an I/O error)
	ExitUsage   = 2 // bad usage or invalid parameters; nothing was written
)

// Streams are the standard streams of one run.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3";
// otherwise it comes from the module's build info.
var Version = ""

// usageError marks a problem with how trainsonnet was called.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// Run runs trainsonnet with args (without the program name) and returns
// the process exit code.
func Run(args []string, s Streams) int {
	root := newRoot(s)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	code := ExitFailure
	var ue *usageError
	if errors.As(err, &ue) || generator.IsValidation(err) || isCobraUsage(err) {
		code = ExitUsage
	}
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		fmt.Fprintln(s.Err, "error: "+line)
	}
	if code == ExitUsage && !generator.IsValidation(err) {
		fmt.Fprintln(s.Err, "Run 'trainsonnet --help' for usage.")
	}
	return code
}

// isCobraUsage recognizes cobra's own argument and flag errors, which it
// returns as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs an argument",
		"invalid argument", "accepts ", "requires ", "bad flag syntax"} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p) {
			return true
		}
	}
	return false
}

func newRoot(s Streams) *cobra.Command {
	opts := &rootOptions{}
	root := &cobra.Command{
		Use:   "trainsonnet",
		Short: "Kubernetes manifests for distributed training jobs, from typed Jsonnet prototypes",
		Long: `trainsonnet renders Kubernetes manifests for distributed training jobs (Open MPI,
Horovod, TensorFlow) from Jsonnet prototypes with typed, validated parameters, as a
YAML stream, a JSON List or a kustomize base. Rendering never needs a cluster.

  trainsonnet list
  trainsonnet describe openmpi
  trainsonnet gen openmpi --name bench --workers 4 --gpu 1 > manifests.yaml
  trainsonnet gen openmpi --name bench --output-dir base/
  trainsonnet batch jobs/ > all.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: false,
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentFlags().StringArrayVarP(&opts.prototypePaths, "prototype-path", "J", nil,
		"directory of prototypes and Jsonnet libraries of your own, searched before the built-in ones (repeatable)")
	root.AddCommand(
		newGenCmd(opts, s),
		newBatchCmd(opts, s),
		newListCmd(opts, s),
		newDescribeCmd(opts, s),
		newSchemaCmd(opts, s),
		newVersionCmd(s),
	)
	return root
}

type rootOptions struct {
	prototypePaths []string
}

// generator is the library with the prototype paths of -J; its errors
// about them get the flag's name (the library knows no flags).
func (o *rootOptions) generator() (*generator.Generator, error) {
	g, err := generator.New(generator.Options{PrototypePaths: o.prototypePaths})
	var perr *fs.PathError
	if errors.As(err, &perr) && perr.Op == generator.OpPrototypePath {
		return nil, &generator.UsageError{Err: fmt.Errorf("--prototype-path %q: %w", perr.Path, perr.Err)}
	}
	return g, err
}

// completePrototypes completes the first argument with prototype names.
func completePrototypes(opts *rootOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		g, err := opts.generator()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return g.Names(), cobra.ShellCompDirectiveNoFileComp
	}
}

func newVersionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print trainsonnet's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(s.Out, "trainsonnet "+version())
			return nil
		},
	}
}

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "(devel)"
}

// outputFormat is the -o flag of gen, list and describe.
type outputFormat struct {
	value   string
	allowed []string
}

func newOutputFormat(def string, allowed ...string) *outputFormat {
	return &outputFormat{value: def, allowed: allowed}
}

func (f *outputFormat) String() string { return f.value }
func (f *outputFormat) Type() string   { return strings.Join(f.allowed, "|") }
func (f *outputFormat) Set(v string) error {
	for _, a := range f.allowed {
		if v == a {
			f.value = v
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(f.allowed, ", "))
}

var _ pflag.Value = (*outputFormat)(nil)

// stdinName is the params file name that means standard input.
const stdinName = "-"

func readFile(name string, in io.Reader) ([]byte, error) {
	if name == stdinName {
		return io.ReadAll(in)
	}
	return os.ReadFile(name)
}

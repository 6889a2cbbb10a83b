package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

func newListCmd(root *rootOptions, s Streams) *cobra.Command {
	out := newOutputFormat("text", "text", "json")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the prototypes",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			g, err := root.generator()
			if err != nil {
				return err
			}
			protos, err := g.Prototypes()
			if err != nil {
				return err
			}
			if out.value == "json" {
				type entry struct {
					Name    string `json:"name"`
					Summary string `json:"summary"`
					Source  string `json:"source"`
					Builtin bool   `json:"builtin"`
				}
				list := make([]entry, len(protos))
				for i, p := range protos {
					list[i] = entry{p.Name, p.Summary, p.Source, p.Builtin}
				}
				return writeJSON(s.Out, list)
			}
			tw := tabwriter.NewWriter(s.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSUMMARY")
			for _, p := range protos {
				fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Summary)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().VarP(out, "output", "o", "text or json")
	return cmd
}

func newDescribeCmd(root *rootOptions, s Streams) *cobra.Command {
	out := newOutputFormat("text", "text", "json")
	cmd := &cobra.Command{
		Use:               "describe <prototype>",
		Short:             "Describe a prototype and every parameter: flag, type, default and rule",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completePrototypes(root),
		RunE: func(_ *cobra.Command, args []string) error {
			g, err := root.generator()
			if err != nil {
				return err
			}
			p, err := g.Lookup(args[0])
			if err != nil {
				return err
			}
			if out.value == "json" {
				return writeJSON(s.Out, p)
			}
			describe(s.Out, p)
			return nil
		},
	}
	cmd.Flags().VarP(out, "output", "o", "text or json")
	return cmd
}

func newSchemaCmd(root *rootOptions, s Streams) *cobra.Command {
	return &cobra.Command{
		Use:               "schema <prototype>",
		Short:             "Print the JSON Schema of a prototype's params file",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completePrototypes(root),
		RunE: func(_ *cobra.Command, args []string) error {
			g, err := root.generator()
			if err != nil {
				return err
			}
			p, err := g.Lookup(args[0])
			if err != nil {
				return err
			}
			b, err := p.JSONSchema()
			if err != nil {
				return err
			}
			_, err = s.Out.Write(b)
			return err
		},
	}
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// describe prints a prototype for people: what it does, then every
// parameter with its flags, type, default and rule.
func describe(w io.Writer, p *generator.Prototype) {
	fmt.Fprintf(w, "%s: %s\n", p.Name, p.Summary)
	if p.Replaces != "" {
		fmt.Fprintf(w, "Replaces %s.\n", p.Replaces)
	}
	fmt.Fprintf(w, "Source: %s\n\n", p.Source)
	if p.Description != "" {
		fmt.Fprintln(w, p.Description)
		fmt.Fprintln(w)
	}
	var own, common []*param.Param
	for _, prm := range p.Params {
		if prm.Common {
			common = append(common, prm)
		} else {
			own = append(own, prm)
		}
	}
	fmt.Fprintln(w, "PARAMETERS")
	describeParams(w, own, "  ")
	fmt.Fprintln(w, "\nCOMMON PARAMETERS")
	describeParams(w, common, "  ")
	if len(p.Removed) > 0 {
		fmt.Fprintln(w, "\nNO LONGER USED (a params file may hold them; each gets a warning)")
		for _, k := range slices.Sorted(maps.Keys(p.Removed)) {
			fmt.Fprintf(w, "  %s\n      %s\n", k, wrap(p.Removed[k], "      "))
		}
	}
	if c := p.Chart; c != nil {
		fmt.Fprintf(w, "\nVALUES OF %s\n  %s\n", strings.ToUpper(c.Name),
			wrap("A params file (or --set) with any of "+strings.Join(c.Keys, ", ")+" is taken for them, and then:", "  "))
		for _, k := range slices.Sorted(maps.Keys(c.Defaults)) {
			d := c.Defaults[k]
			v, _ := json.Marshal(d.Value)
			fmt.Fprintf(w, "  %s: %s unless set\n      %s\n", k, v, wrap("the chart's: "+d.Why, "      "))
		}
		for _, k := range slices.Sorted(maps.Keys(c.Differs)) {
			fmt.Fprintf(w, "  %s, unless set\n      %s\n", k, wrap(c.Differs[k], "      "))
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  - %s\n", wrap(n, "    "))
		}
	}
	fmt.Fprintln(w, `
Every parameter is a flag of 'trainsonnet gen `+p.Name+`' in kebab-case and in the spelling
shown in brackets. In a params file (-f) use the declared names, groups as maps:
  ssh:
    port: 2222
and --set takes the declared path: --set ssh.port=2222.`)
}

func describeParams(w io.Writer, ps []*param.Param, indent string) {
	for _, p := range ps {
		if p.Type == param.TypeGroup {
			fmt.Fprintf(w, "%s%s: %s\n", indent, p.Path, wrap(p.Doc, indent+"  "))
			describeParams(w, p.Params, indent+"  ")
			continue
		}
		names := flagNames(p)
		head := indent + "--" + names[0] + " " + typeName(p)
		if len(names) > 1 {
			head += "  [" + strings.Join(names[1:], ", ") + "]"
		}
		fmt.Fprintln(w, head)
		fmt.Fprintf(w, "%s    %s\n", indent, wrap(p.Doc, indent+"    "))
		facts := []string{"accepts " + p.Rule()}
		if d := defaultText(p); d != "" {
			facts = append([]string{"default " + d}, facts...)
		} else if p.Default == nil {
			facts = append([]string{"unset by default"}, facts...)
		}
		for _, r := range []struct {
			rel  *param.Relation
			word string
		}{{p.AtMost, "at most "}, {p.AtLeast, "at least "}} {
			if r.rel == nil {
				continue
			}
			fact := r.word + r.rel.Param
			if r.rel.UnlessZero {
				fact += " (unless it is 0)"
			}
			facts = append(facts, fact)
		}
		if p.Needs != nil {
			facts = append(facts, "needs "+p.Needs.Param)
		}
		if p.Replaces != "" {
			facts = append(facts, "was "+p.Replaces)
		}
		fmt.Fprintf(w, "%s    (%s)\n", indent, strings.Join(facts, "; "))
	}
}

// wrap folds text at about 88 columns, continuing lines with indent.
func wrap(text, indent string) string {
	var b strings.Builder
	col := len(indent)
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if col+1+len(word) > 88 {
				b.WriteString("\n" + indent)
				col = len(indent)
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

// printGenHelp prints gen's help, with the prototype's parameter flags when
// one is named.
func printGenHelp(s Streams, g *generator.Generator, proto *generator.Prototype, fs *pflag.FlagSet) error {
	fmt.Fprintln(s.Out, "Usage: trainsonnet "+genUse)
	if proto == nil {
		fmt.Fprintln(s.Out, "\nPrototypes: "+strings.Join(g.Names(), ", "))
		fmt.Fprintln(s.Out, "Run 'trainsonnet gen <prototype> --help' for its parameter flags.")
		return nil
	}
	fmt.Fprintf(s.Out, "\n%s: %s\n\nFlags:\n", proto.Name, proto.Summary)
	fmt.Fprint(s.Out, fs.FlagUsagesWrapped(100))
	fmt.Fprintf(s.Out, "\nHidden synonyms: every flag also takes its declared spelling (see 'trainsonnet describe %s').\n", proto.Name)
	return nil
}

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/shoal-project/shoal/control/policy"
	"github.com/spf13/cobra"
)

func (cl *cli) policies() *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "policies [KIND]",
		Short: "List every policy, by kind, with its parameters and where it runs",
		Long: `List every policy Shoal runs, by kind (request selector, autoscaler, route,
serverless configuration, edge scheduler): its parameters with their defaults
and ranges, where it runs (sim: shoal sim and the experiments; proxy; operator;
edge: shoal edge evaluate), what it does and where it comes from.

A policy takes its parameters in its name, NAME:PARAM=VALUE (several:
hpa:target=45:tolerance=0.05); a learned one takes its file, NAME:FILE or
NAME:file=FILE; in 'shoal sim --policy', FROM..TO/STEP runs one policy per
setting (hpa:target=30..90/15). KIND is one of selector, autoscaler, route,
serverless, edge. docs/reference/policies.md is this list.`,
		Example: `  shoal policies
  shoal policies autoscaler
  shoal sim trainticket-surge --policy hpa:target=30..90/15,kpa`,
		Args: cobra.MaximumNArgs(1),
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print docs/reference/policies.md")
	cmd.RunE = cl.action(func(_ *cobra.Command, args []string) error {
		kinds := policy.Kinds()
		if len(args) == 1 {
			i := slices.IndexFunc(kinds, func(k policy.Kind) bool { return kindWord(k) == args[0] })
			if i < 0 {
				return usagef("unknown kind %q (want one of %s)", args[0], strings.Join(kindWords(), ", "))
			}
			kinds = kinds[i : i+1]
		}
		if markdown {
			return writePoliciesMarkdown(cl.stdout, kinds)
		}
		return writePolicies(cl.stdout, kinds)
	})
	return cmd
}

// kindWord is a kind's one-word name on the command line.
func kindWord(k policy.Kind) string {
	w, _, _ := strings.Cut(string(k), " ")
	if k == policy.Selector {
		return "selector"
	}
	return w
}

func kindWords() []string {
	var out []string
	for _, k := range policy.Kinds() {
		out = append(out, kindWord(k))
	}
	return out
}

// usage is how a policy is named: with its file, or its short parameter.
func usage(p *policy.Policy) string {
	switch {
	case p.File == policy.NeedsFile:
		return p.Name + ":FILE"
	case p.File == policy.OptionalFile:
		return p.Name + "[:FILE]"
	case p.Short != "":
		return p.Name + ":" + strings.ToUpper(p.Short)
	}
	return p.Name
}

func paramDefault(q policy.Param) string {
	switch {
	case q.Required:
		return "required"
	case q.Default == "":
		return "as noted"
	}
	return q.Default
}

func writePolicies(w io.Writer, kinds []policy.Kind) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, k := range kinds {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%ss\n", strings.ToUpper(string(k[:1]))+string(k[1:]))
		for _, p := range policy.All() {
			if p.Kind != k {
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", usage(&p), p.Runs, p.Doc)
			for _, q := range p.Params {
				def := "default " + paramDefault(q)
				if q.Required {
					def = "required"
				}
				fmt.Fprintf(tw, "    %s\t\t%s; %s; %s\n", q.Name, def, q.Range(), q.Doc)
			}
		}
	}
	return tw.Flush()
}

func writePoliciesMarkdown(w io.Writer, kinds []policy.Kind) error {
	var b strings.Builder
	b.WriteString(`# Policies

<!-- Generated from the policy registry (control/policy) by 'go generate ./cmd/shoal'.
Do not edit: edit the registry. -->

Every policy Shoal runs, by kind, as ` + "`shoal policies`" + ` lists them. A policy takes its
parameters in its name, ` + "`NAME:PARAM=VALUE`" + ` (several: ` + "`hpa:target=45:tolerance=0.05`" + `); a
learned one takes its file, ` + "`NAME:FILE`" + ` or ` + "`NAME:file=FILE`" + `. In ` + "`shoal sim --policy`" + `,
` + "`FROM..TO/STEP`" + ` runs one policy per setting: ` + "`hpa:target=30..90/15`" + ` sweeps the HPA's
target, and the report draws the settings as the HPA's frontier. Each result is named by
the policy and its settings, so two settings of one knob are two rows. A duration
parameter (unit s) also takes a Go duration (` + "`300ms`" + `). A wrong name or setting is an
error that names the policy, the parameter and its range.

Runs: **sim** in ` + "`shoal sim`" + ` and the experiments, **proxy** in ` + "`shoal proxy`" + `, **operator** in
` + "`shoal operator`" + `, **edge** in ` + "`shoal edge evaluate`" + `.
`)
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n## %ss\n\n| policy | runs | what it does | source |\n|---|---|---|---|\n", strings.ToUpper(string(k[:1]))+string(k[1:]))
		var params strings.Builder
		for _, p := range policy.All() {
			if p.Kind != k {
				continue
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", usage(&p), p.Runs, p.Doc, p.Source)
			for _, q := range p.Params {
				fmt.Fprintf(&params, "| `%s` | `%s` | %s | %s | %s |\n", p.Name, q.Name, paramDefault(q), q.Range(), q.Doc)
			}
		}
		if params.Len() > 0 {
			b.WriteString("\n| policy | parameter | default | range | meaning |\n|---|---|---|---|---|\n")
			b.WriteString(params.String())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

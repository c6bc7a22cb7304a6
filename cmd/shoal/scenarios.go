package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) scenarios() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List the embedded scenarios",
		Long: `List the scenarios embedded in the binary, each with its description. Any of them
runs by name in 'shoal sim' and 'shoal train'; 'shoal scenarios dump' writes one
out as a file to edit and run (docs/guide/scenarios.md shows how; every field is
in docs/reference/scenario.md).`,
		Example: "  shoal scenarios\n  shoal scenarios dump trainticket -o tt.yaml",
		RunE: cl.action(func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown subcommand %q (want dump, or nothing to list)", args[0])
			}
			list, err := scenario.List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cl.stdout, 0, 0, 2, ' ', 0)
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Description)
			}
			return tw.Flush()
		}),
	}
	cmd.AddCommand(cl.scenariosDump())
	return cmd
}

func (cl *cli) scenariosDump() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "dump NAME",
		Short: "Print an embedded scenario, comments included, to edit and run",
		Example: `  shoal scenarios dump mm1
  shoal scenarios dump trainticket -o tt.yaml && shoal sim tt.yaml`,
		Args:              exactArgs(1, "one scenario name (from 'shoal scenarios')"),
		ValidArgsFunction: completeScenarios,
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to `FILE` instead of standard output")
	cmd.RunE = cl.action(func(_ *cobra.Command, args []string) error {
		raw, err := scenario.Raw(args[0])
		if err != nil {
			return err
		}
		if out == "" {
			_, err = cl.stdout.Write(raw)
			return err
		}
		return os.WriteFile(out, raw, 0o644)
	})
	return cmd
}

// exactArgs accepts exactly n positional arguments, described by what.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("want %s, got %d arguments", what, len(args))
		}
		return nil
	}
}

// completeScenarios completes the names of the embedded scenarios; files
// complete as files.
func completeScenarios(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := scenario.List()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = s.Name + "\t" + s.Description
	}
	return names, cobra.ShellCompDirectiveDefault
}

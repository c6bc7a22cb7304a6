package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/shoal-project/shoal/scenario"
)

func cmdScenarios(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		list, err := scenario.List()
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Description)
		}
		return tw.Flush()
	}
	if args[0] != "dump" {
		return fmt.Errorf("scenarios: unknown subcommand %q (want dump): %w", args[0], errUsage)
	}
	fs := flag.NewFlagSet("scenarios dump", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "output file (default: standard output)")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("scenarios dump: want one scenario name, got %d: %w", len(pos), errUsage)
	}
	raw, err := scenario.Raw(pos[0])
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(raw)
		return err
	}
	if err := os.WriteFile(*out, raw, 0o644); err != nil {
		return fmt.Errorf("scenarios dump: %w", err)
	}
	return nil
}

// parseInterleaved parses flags that may come before or after positional
// arguments, returning the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%s: %v: %w", fs.Name(), err, errUsage)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

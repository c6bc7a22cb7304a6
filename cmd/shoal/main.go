// Command shoal is Shoal's command line: it simulates services and the
// policies that manage them, trains learned controllers, reproduces the
// papers' experiments, and runs the real data plane (a load balancer, an
// emulated backend and a load generator). `shoal help` is the overview and
// `shoal CMD --help` the usage of each command.
//
// Exit codes: 0 ok, 1 the run failed, 2 the command line is wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// errUsage marks errors in the command line: exit code 2.
var errUsage = errors.New("usage")

// usageError is a command-line error with the command whose help answers it.
type usageError struct {
	command string // e.g. "shoal sim"
	err     error
}

func (e *usageError) Error() string   { return strings.TrimSuffix(e.err.Error(), ": "+errUsage.Error()) }
func (e *usageError) Unwrap() []error { return []error{e.err, errUsage} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exitCode(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// exitCode reports err on stderr and returns the process's exit code:
// 0 ok, 1 the run failed, 2 a usage error (with a pointer to the help).
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "shoal:", ue)
		fmt.Fprintf(stderr, "run '%s --help' for usage\n", ue.command)
		return 2
	default:
		fmt.Fprintln(stderr, "shoal:", err)
		return 1
	}
}

// run executes one command line. An error in the command line (an unknown
// command or flag, a bad flag value, missing arguments) comes back as a
// *usageError naming the command whose --help explains it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cli := &cli{args: args, stdout: stdout, stderr: stderr}
	root := cli.root()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.InitDefaultCompletionCmd(args...)
	if c, rest, err := root.Find(args); err == nil && c != root && len(rest) == 1 && rest[0] == "help" {
		c.InitDefaultHelpFlag()
		return c.Help() // `shoal sim help` as `shoal sim --help`
	}
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	if !cli.ran || errors.Is(err, errUsage) {
		// Cobra's own errors (unknown command or flag, bad flag value) come
		// before the command runs.
		return &usageError{command: c.CommandPath(), err: err}
	}
	return err
}

// cli builds the command tree for one run; ran records whether a command's
// action started, which separates usage errors from failed runs.
type cli struct {
	args           []string // the command line, for reports
	stdout, stderr io.Writer
	ran            bool
}

// action wraps a command's body so that errors it returns count as failed
// runs unless they wrap errUsage.
func (cl *cli) action(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cl.ran = true
		return f(cmd, args)
	}
}

const overview = `Shoal: learning-based resource management of cloud-native services.

Shoal simulates services, load balancers and autoscalers fast enough to train
controllers in minutes, compares every policy against today's heuristics on the
same arrivals, and runs the same controllers in a real HTTP load balancer.

Exit codes: 0 ok, 1 the run failed, 2 the command line is wrong.
Docs: docs/README.md (guides, reference, results), docs/DESIGN.md (architecture).`

func (cl *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "shoal",
		Short: "Learning-based resource management of cloud-native services",
		Long:  overview,
		Example: `  shoal scenarios
  shoal sim lb-moderate-cpu --out out/lb-moderate-cpu
  shoal train distr-lb lb-moderate-cpu -o distr.slb
  shoal sim lb-moderate-cpu --policy sed,distr-lb:distr.slb`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.Flags().Bool("version", false, "print the version (as 'shoal version') and exit")
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.AddGroup(&cobra.Group{ID: "sim", Title: "Simulate, learn and reproduce:"},
		&cobra.Group{ID: "real", Title: "The real data plane:"})
	for _, c := range []*cobra.Command{cl.scenarios(), cl.policies(), cl.sim(), cl.train(), cl.experiment(), cl.edgeCmd(), cl.sweepCmd(), cl.runsCmd()} {
		c.GroupID = "sim"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{cl.proxy(), cl.backend(), cl.load(), cl.operatorCmd(), cl.recordCmd()} {
		c.GroupID = "real"
		root.AddCommand(c)
	}
	root.AddCommand(cl.version())
	return root
}

// usagef is a usage error of the command line.
func usagef(format string, a ...any) error {
	return fmt.Errorf(format+": %w", append(a, errUsage)...)
}

package main

import (
	"fmt"
	"strings"

	"github.com/shoal-project/shoal/envs/edgeenv"
	"github.com/shoal-project/shoal/experiment"
	"github.com/spf13/cobra"
)

func (cl *cli) experimentEdge() *cobra.Command {
	var (
		out           string
		seeds, agents int
		steps         int
	)
	def := experiment.DefaultEdgeStudy("")
	cmd := &cobra.Command{
		Use:   "edge distributions",
		Short: "Edge scheduling paper: the virtual agents' distributions (Table 1); the rest is not built yet",
		Long: `Log the simulated edge-cloud world under the random engine policy (a week of
one-hour windows: the real system's history) into DIR/logs, learn virtual
agents from the devices' records alone with GAN-SMMSG, a Gaussian mixture of 10
components, a GAN and a WGAN, generate --agents of each, and write the KL
between virtual and real agents on the four measures (average task time,
convergence time, offloading ratio, agent type): the paper's Table 1, with 95%
intervals over --seeds training seeds, in DIR/distributions.csv, .json, .html.

The virtual environment (MAIL-MMSG), the policy trained in it (MA-PPO) and the
offload-ratio and generalisation studies are not built yet (issue 20).`,
		Example:   `  shoal experiment edge distributions --seeds 3`,
		Args:      exactArgs(1, "distributions"),
		ValidArgs: []string{"distributions"},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/edge", "results `DIR`")
	f.IntVar(&seeds, "seeds", def.Seeds, "training seeds of the generators")
	f.IntVar(&agents, "agents", def.Agents, "virtual agents generated per method")
	f.IntVar(&steps, "steps", def.Steps, "generator updates of the GANs")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if args[0] != "distributions" {
			return usagef("unknown edge experiment %q (known: distributions; offload-ratio and generalisation are not built yet)", args[0])
		}
		if seeds <= 0 || agents <= 0 || steps <= 0 {
			return usagef("--seeds, --agents and --steps must be positive")
		}
		s := experiment.DefaultEdgeStudy(out)
		s.Seeds, s.Agents, s.Steps = seeds, agents, steps
		rows, err := s.Distributions(cmd.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "KL between virtual and real agents (%s), mean over %d seeds:\n", strings.Join(edgeenv.Measures, ", "), seeds)
		for _, r := range rows {
			fmt.Fprintf(cl.stdout, "%-10s", r.Method)
			for _, k := range r.KL {
				fmt.Fprintf(cl.stdout, " %8.4f", float64(k.Mean))
			}
			fmt.Fprintln(cl.stdout)
		}
		fmt.Fprintf(cl.stdout, "wrote %s/distributions.csv, .json, .html and the logs in %s/logs\n", out, out)
		return nil
	})
	return cmd
}

package main

import (
	"fmt"
	"math"
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
		Use:   "edge distributions|offload-ratio",
		Short: "Edge scheduling paper: the virtual agents (Table 1) and environments (Fig. 4); the rest is not built yet",
		Long: `Log the simulated edge-cloud world under the random engine policy (the real
system's history) into DIR/logs and learn from the logs alone:

distributions (Table 1): from a week of one-hour windows, virtual agents
  learned from the devices' records by GAN-SMMSG, a Gaussian mixture of 10
  components, a GAN and a WGAN; --agents of each; the KL between virtual and
  real agents on the four measures (average task time, convergence time,
  offloading ratio, agent type), with 95% intervals over --seeds training
  seeds; DIR/distributions.csv, .json, .html.
offload-ratio (Fig. 4): day 2 split into 12 slices, a virtual environment
  (MAIL-style, per agent) learned from each slice alone, and each scene's
  offloading ratio under the random policy, real against virtual;
  DIR/offload-ratio.csv, .json, .html (about 6 minutes).

MA-PPO's generalisation study (Table 2) is not built yet (issue 20).`,
		Example: `  shoal experiment edge distributions --seeds 3
  shoal experiment edge offload-ratio`,
		Args:      exactArgs(1, "distributions or offload-ratio"),
		ValidArgs: []string{"distributions", "offload-ratio"},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/edge", "results `DIR`")
	f.IntVar(&seeds, "seeds", def.Seeds, "training seeds of the generators")
	f.IntVar(&agents, "agents", def.Agents, "virtual agents generated per method")
	f.IntVar(&steps, "steps", def.Steps, "generator updates of the GANs")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if args[0] != "distributions" && args[0] != "offload-ratio" {
			return usagef("unknown edge experiment %q (known: distributions, offload-ratio; generalisation is not built yet)", args[0])
		}
		if seeds <= 0 || agents <= 0 || steps <= 0 {
			return usagef("--seeds, --agents and --steps must be positive")
		}
		s := experiment.DefaultEdgeStudy(out)
		s.Seeds, s.Agents, s.Steps = seeds, agents, steps
		if args[0] == "offload-ratio" {
			rows, err := s.OffloadRatio(cmd.Context())
			if err != nil {
				return err
			}
			worst := 0.0
			for _, r := range rows {
				worst = max(worst, math.Abs(r.Real-r.Virtual))
			}
			fmt.Fprintf(cl.stdout, "%d slices of day %g: the virtual environments' offloading ratio is within %.3f of the real one for every scene\nwrote %s/offload-ratio.csv, .json, .html (logging seed %d)\n",
				s.Slices, s.OffloadDay, worst, out, s.Logging.Seed)
			return nil
		}
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

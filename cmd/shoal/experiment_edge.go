package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/envs/edgeenv"
	"github.com/shoal-project/shoal/experiment"
	"github.com/spf13/cobra"
)

func (cl *cli) experimentEdge(rec *experimentRecorder) *cobra.Command {
	var (
		out           string
		seeds, agents int
		steps         int
		quiet         bool
	)
	def := experiment.DefaultEdgeStudy("")
	gen := experiment.DefaultGeneralisation()
	pt := experiment.DefaultPerTaskStudy()
	cmd := &cobra.Command{
		Use:   "edge distributions|offload-ratio|generalisation|per-task|all",
		Short: "Edge scheduling paper: virtual agents (Table 1), environments (Fig. 4), policies' generalisation (Table 2), a per-task rule from logs",
		Long: `Log the simulated edge-cloud world (the real system's history) into DIR/logs
and learn from the logs alone:

distributions (Table 1): from a week of one-hour windows, virtual agents
  learned from the devices' records by GAN-SMMSG, a Gaussian mixture of 10
  components, a GAN and a WGAN; --agents of each; the KL between virtual and
  real agents on the four measures (average task time, convergence time,
  offloading ratio, agent type), with 95% intervals over --seeds training
  seeds; DIR/distributions.csv, .json, .html. Beyond the paper, the GMM and
  GAN-SMMSG on eight richer features per device (its task times' spread,
  misses and input size), per feature and over every pair's joint
  histogram; DIR/distributions-rich.csv, .json, .html.
offload-ratio (Fig. 4): day 2 split into 12 slices, a virtual environment
  (MAIL-style, one joint model) learned from each slice alone, and each scene's
  offloading ratio under the random policy, real against virtual;
  DIR/offload-ratio.csv, .json, .html (about 3.5 minutes).
generalisation (Table 2): per seed, day 0 logged whole twice: by the
  paper's random engine in the paper's world, and by an operator's engines
  (the default mix of 'shoal edge log', weights biasing the greedy rule).
  From each log alone a virtual environment, MA-PPO trained in it (the
  paper's: Eq. 8; the operator's: an ensemble of four models, Eq. 8 at 0.3
  and their disagreement charged at 0.1) and BC on the log; with PPO in the
  real world on day 0 under each world's rule (the upper bound), the random
  engine, the operator's engines themselves and the greedy and threshold
  heuristics, every policy runs in the real world 0, 1, 7 and 30 days later.
  The successful offloading ratio's gain over the random engine (Table 2),
  the mean task completion time and the deadline misses, with 95% intervals
  over --seeds; DIR/generalisation.csv, .json, .html.
per-task: per scenario (--staleness: how stale the platform's view of the
  queues is) and seed, day 0 logged whole under the operator's engines with
  one task in ` + strconv.Itoa(edgeenv.TaskEvery) + ` recorded; from the task records alone a grey-box
  environment (the world's structure given; rates, work, sizes, preferences,
  devices and link bandwidths by hour learned, an ensemble of bootstrap
  fits), a per-task rule cloned from the logged choices (bc-task) and one
  trained by PPO in the grey box (task-greybox); with the same rule trained
  by PPO in the real world (task-real, the ceiling), greedy, greedy-tracked
  and the paper's pipeline (MA-PPO in a black-box environment learned from
  the same day, mappo-blackbox), every policy runs in the real world 0, 7
  and 30 days later. Also the grey box's and the paper's black-box environment's
  fidelity to a held-out day's log (KL per step measure, pair KL) and the
  pipeline's time; DIR/pertask.csv, .json, .html (3 seeds of one scenario:
  about an hour on 2 cores).
all: distributions, offload-ratio and generalisation.`,
		Example: `  shoal experiment edge distributions --seeds 3
  shoal experiment edge offload-ratio
  shoal experiment edge generalisation --seeds 3
  shoal experiment edge per-task --staleness 0,1s`,
		Args:      exactArgs(1, "distributions, offload-ratio, generalisation, per-task or all"),
		ValidArgs: []string{"distributions", "offload-ratio", "generalisation", "per-task", "all"},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/edge", "results `DIR`")
	f.IntVar(&seeds, "seeds", def.Seeds, "training seeds of the generators")
	f.IntVar(&agents, "agents", def.Agents, "virtual agents generated per method")
	f.IntVar(&steps, "steps", def.Steps, "generator updates of the GANs")
	f.IntVar(&gen.MAPPO.Steps, "policy-steps", gen.MAPPO.Steps, "environment steps per agent of MA-PPO (generalisation)")
	f.IntVar(&gen.RealSteps, "real-steps", gen.RealSteps, "environment steps per agent of PPO in the real world (generalisation)")
	f.DurationSliceVar(&pt.Staleness, "staleness", pt.Staleness, "the per-task study's scenarios: how often the platform refreshes its view of the queues (0: always current)")
	f.IntVar(&pt.Training.Episodes, "episodes", pt.Training.Episodes, "hour-long episodes of the per-task rules' PPO (per-task)")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		switch args[0] {
		case "distributions", "offload-ratio", "generalisation", "per-task", "all":
		default:
			return usagef("unknown edge experiment %q (known: distributions, offload-ratio, generalisation, per-task, all)", args[0])
		}
		if seeds <= 0 || agents <= 0 || steps <= 0 || gen.MAPPO.Steps <= 0 || gen.RealSteps <= 0 || pt.Training.Episodes <= 0 {
			return usagef("--seeds, --agents, --steps, --policy-steps, --real-steps and --episodes must be positive")
		}
		for _, st := range pt.Staleness {
			if st < 0 {
				return usagef("--staleness: %v is negative", st)
			}
		}
		s := experiment.DefaultEdgeStudy(out)
		s.Seeds, s.Agents, s.Steps = seeds, agents, steps
		if args[0] == "all" {
			for _, part := range []func() error{
				func() error { return cl.edgeDistributions(cmd, s, rec) },
				func() error { return cl.edgeOffloadRatio(cmd, s, rec) },
				func() error { return cl.edgeGeneralisation(cmd, s, gen, quiet, rec) },
			} {
				if err := part(); err != nil {
					return err
				}
			}
			return nil
		}
		switch args[0] {
		case "offload-ratio":
			return cl.edgeOffloadRatio(cmd, s, rec)
		case "generalisation":
			return cl.edgeGeneralisation(cmd, s, gen, quiet, rec)
		case "per-task":
			return cl.edgePerTask(cmd, s, pt, quiet, rec)
		}
		return cl.edgeDistributions(cmd, s, rec)
	})
	return cmd
}

func (cl *cli) edgeOffloadRatio(cmd *cobra.Command, s experiment.EdgeStudy, rec *experimentRecorder) error {
	rows, err := s.OffloadRatio(cmd.Context())
	if err != nil {
		return err
	}
	worst, sum := 0.0, 0.0
	for _, r := range rows {
		worst = max(worst, math.Abs(r.Real-r.Virtual))
		sum += math.Abs(r.Real - r.Virtual)
	}
	hash, err := s.Hash()
	rec.study(hash, err, []experiment.StudyRow{{Scenario: "edge-offload-ratio", Policy: "random", RootSeed: s.Logging.Seed, Seeds: 1,
		Row: map[string]float64{"worst_gap": worst, "mean_gap": sum / float64(max(len(rows), 1)), "scenes": float64(len(rows))}}})
	fmt.Fprintf(cl.stdout, "%d slices of day %g: the virtual environments' offloading ratio is within %.3f of the real one for every scene\nwrote %s/offload-ratio.csv, .json, .html (logging seed %d)\n",
		s.Slices, s.OffloadDay, worst, s.Dir, s.Logging.Seed)
	return nil
}

func (cl *cli) edgeDistributions(cmd *cobra.Command, s experiment.EdgeStudy, rec *experimentRecorder) error {
	rows, err := s.Distributions(cmd.Context())
	if err != nil {
		return err
	}
	var runs []experiment.StudyRow
	for _, r := range rows {
		kl := map[string]experiment.Stat{}
		for i, k := range r.KL {
			kl["kl_"+strings.ReplaceAll(edgeenv.Measures[i], " ", "_")] = k
		}
		runs = append(runs, experiment.StudyRow{Scenario: "edge-agents", Policy: r.Method, RootSeed: s.Logging.Seed, Seeds: s.Seeds, Row: kl})
	}
	hash, err := s.Hash()
	rec.study(hash, err, runs)
	fmt.Fprintf(cl.stdout, "KL between virtual and real agents (%s), mean over %d seeds:\n", strings.Join(edgeenv.Measures, ", "), s.Seeds)
	for _, r := range rows {
		fmt.Fprintf(cl.stdout, "%-10s", r.Method)
		for _, k := range r.KL {
			fmt.Fprintf(cl.stdout, " %8.4f", float64(k.Mean))
		}
		fmt.Fprintln(cl.stdout)
	}
	fmt.Fprintf(cl.stdout, "wrote %s/distributions.csv, .json, .html, the richer features' distributions-rich.csv, .json, .html, and the logs in %s/logs\n", s.Dir, s.Dir)
	return nil
}

func (cl *cli) edgeGeneralisation(cmd *cobra.Command, s experiment.EdgeStudy, gen experiment.Generalisation, quiet bool, rec *experimentRecorder) error {
	progress, done := cl.stageBar(quiet)
	defer done()
	start := time.Now()
	rows, err := s.GeneralisationStudy(cmd.Context(), gen, progress)
	if err != nil {
		return err
	}
	var runs []experiment.StudyRow
	for _, r := range rows { // each policy on each later day: a scenario per day
		runs = append(runs, experiment.StudyRow{Scenario: fmt.Sprintf("edge+%gd", r.Later), Policy: r.Policy, RootSeed: s.Logging.Seed, Seeds: s.Seeds, Row: r})
	}
	hash, err := s.Hash()
	rec.study(hash, err, runs)
	fmt.Fprintf(cl.stdout, "successful offloading ratio's gain over the random engine (Table 2) | mean task time (s) | deadline misses, mean over %d seeds from %d:\n%-16s", s.Seeds, s.Logging.Seed, "policy")
	for _, d := range gen.Later {
		fmt.Fprintf(cl.stdout, " %24s", fmt.Sprintf("+%g days", d))
	}
	fmt.Fprintln(cl.stdout)
	for i, r := range rows {
		if i%len(gen.Later) == 0 {
			fmt.Fprintf(cl.stdout, "%-16s", r.Policy)
		}
		fmt.Fprintf(cl.stdout, " %+6.1f%% | %6.3f | %5.3f", 100*float64(r.Improvement.Mean), float64(r.MeanTime.Mean), float64(r.Missed.Mean))
		if i%len(gen.Later) == len(gen.Later)-1 {
			fmt.Fprintln(cl.stdout)
		}
	}
	fmt.Fprintf(cl.stdout, "wrote %s/generalisation.csv, .json, .html in %s\n", s.Dir, time.Since(start).Round(time.Second))
	return nil
}

func (cl *cli) edgePerTask(cmd *cobra.Command, s experiment.EdgeStudy, p experiment.PerTaskStudy, quiet bool, rec *experimentRecorder) error {
	progress, done := cl.stageBar(quiet)
	defer done()
	start := time.Now()
	res, err := s.PerTaskStudy(cmd.Context(), p, progress)
	if err != nil {
		return err
	}
	var runs []experiment.StudyRow
	for _, r := range res.Rows {
		runs = append(runs, experiment.StudyRow{Scenario: fmt.Sprintf("edge-stale-%s+%gd", r.Staleness, r.Later), Policy: r.Policy, RootSeed: s.Logging.Seed, Seeds: s.Seeds, Row: r})
	}
	hash, err := s.Hash()
	rec.study(hash, err, runs)
	fmt.Fprintf(cl.stdout, "mean task time (s) | deadline misses, mean over %d seeds from %d:\n", s.Seeds, s.Logging.Seed)
	for i, r := range res.Rows {
		if i%len(p.Later) == 0 {
			fmt.Fprintf(cl.stdout, "%-6s %-16s", r.Staleness, r.Policy)
		}
		fmt.Fprintf(cl.stdout, " +%gd %6.3f | %5.3f", r.Later, float64(r.MeanTime.Mean), float64(r.Missed.Mean))
		if i%len(p.Later) == len(p.Later)-1 {
			fmt.Fprintln(cl.stdout)
		}
	}
	fmt.Fprintf(cl.stdout, "fidelity to a held-out day (KL: %s, scene; pair KL):\n", strings.Join(edgeenv.StepMeasures, ", "))
	for _, f := range res.Fidelity {
		fmt.Fprintf(cl.stdout, "%-6s %-10s", f.Staleness, f.Env)
		for _, k := range f.KL {
			fmt.Fprintf(cl.stdout, " %7.4f", float64(k.Mean))
		}
		fmt.Fprintf(cl.stdout, " | %7.4f\n", float64(f.Pairs.Mean))
	}
	for _, st := range p.Staleness {
		x := res.Pipeline[st.String()]
		fmt.Fprintf(cl.stdout, "pipeline from task records to the rule, %v stale: %.0f s\n", st, float64(x.Mean))
	}
	fmt.Fprintf(cl.stdout, "wrote %s/pertask.csv, .json, .html in %s\n", s.Dir, time.Since(start).Round(time.Second))
	return nil
}

// stageBar is a progress bar of labelled stages on stderr (nil, and a
// no-op, when quiet), and what ends it.
func (cl *cli) stageBar(quiet bool) (func(frac float64, stage string), func()) {
	if quiet {
		return nil, func() {}
	}
	bar := newProgressBar(cl.stderr)
	return func(frac float64, stage string) { bar.show(frac, stage, false) }, bar.done
}

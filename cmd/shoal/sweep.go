package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/store"
	"github.com/shoal-project/shoal/sweep"
	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sweepFlags are what `shoal sweep` and `shoal sweep status` share.
type sweepFlags struct {
	db, id, on string
	kube       sweep.KubeJob
	kubeconfig string
}

func (s *sweepFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.db, "db", "", dbHelp)
	f.StringVar(&s.id, "id", "", "the sweep's id in the store (default: the file's name); a sweep resumes the runs of its id")
	f.StringVar(&s.on, "on", "", "run beyond this machine: kubernetes (an Indexed Job, one pod per shard)")
	f.StringVar(&s.kube.Namespace, "namespace", "default", "--on kubernetes: the namespace")
	f.IntVar(&s.kube.Shards, "shards", 4, "--on kubernetes: shards, one pod each")
	f.StringVar(&s.kubeconfig, "kubeconfig", "", "--on kubernetes: the kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
}

func (s *sweepFlags) load(path string) (*sweep.Spec, string, error) {
	spec, err := sweep.Load(path)
	if err != nil {
		return nil, "", err
	}
	id := s.id
	if id == "" {
		id = spec.Name
	}
	if s.on != "" && s.on != "kubernetes" {
		return nil, "", usagef("--on %q: want kubernetes", s.on)
	}
	return spec, id, nil
}

func (cl *cli) sweepCmd() *cobra.Command {
	var (
		sf      sweepFlags
		shard   string
		workers int
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "sweep FILE",
		Short: "Run a sweep of scenarios x loads x policies x seeds into the run store",
		Long: `Run a sweep file: every scenario at every load under every policy, over its seeds,
with policies trained first where the file has train steps. Each run is recorded
in the run store as it finishes (one transaction), so a sweep that stopped
resumes: runs its id already has are skipped.

--shard i/n runs only shard i of n (jobs whose index is i modulo n); the shards
of a sweep together record exactly the runs of a local run. --on kubernetes
submits the sweep as an Indexed Job, one pod per shard, writing to a shared
PostgreSQL (--db postgres://..., or --db-secret); 'shoal sweep status' follows it.

A sweep file:

  name: distr-lb                     # the default id
  scenarios: [lb-moderate-cpu]       # embedded names or files (relative to this one)
  loads: [0.7, 0.85, 0.95]           # default: each scenario's own
  policies: [sed, c3, probing-sed]
  seed: 1001                         # root seed (default: the scenario's)
  seeds: 5                           # seeds per run (default: the scenario's)
  horizon: 3m                        # default: the scenario's
  train:                             # train-then-evaluate steps
    - {learner: distr-lb, episodes: 30, as: [distr-lb, distr-lb+probing]}`,
		Example: `  shoal sweep bench/sweeps/distr-lb.yaml
  shoal sweep bench/sweeps/distr-lb.yaml --id distr-lb-again
  shoal sweep bench/sweeps/distr-lb.yaml --shard 1/4 --db postgres://shoal@db/shoal
  shoal sweep bench/sweeps/distr-lb.yaml --on kubernetes --image ghcr.io/me/shoal:dev --shards 8 --db-secret shoal-db
  shoal sweep status bench/sweeps/distr-lb.yaml`,
		Args: exactArgs(1, "one sweep file"),
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&shard, "shard", "0/1", "run shard `i/n` of the sweep")
	f.IntVar(&workers, "workers", 0, "jobs in parallel (default: the number of CPUs)")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	f.StringVar(&sf.kube.Image, "image", "", "--on kubernetes: an image whose entrypoint is shoal")
	f.IntVar(&sf.kube.Parallelism, "parallelism", 0, "--on kubernetes: pods at once (default: --shards)")
	f.StringVar(&sf.kube.DBSecret, "db-secret", "", "--on kubernetes: a Secret whose key url is the PostgreSQL URL (instead of --db)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		spec, id, err := sf.load(args[0])
		if err != nil {
			return err
		}
		if workers < 0 {
			return usagef("--workers must not be negative")
		}
		if sf.on == "kubernetes" {
			return cl.submitSweep(cmd.Context(), &sf, spec, id)
		}
		i, n, err := sweep.ParseShard(shard)
		if err != nil {
			return usagef("--%v", err)
		}
		st, err := openStore(cmd.Context(), sf.db)
		if err != nil {
			return err
		}
		defer st.Close()
		r := &sweep.Runner{Spec: spec, Store: st, ID: id, Shard: i, Shards: n, Workers: workers, CodeVersion: version()}
		if !quiet && cl.stderr == os.Stderr && isTerminal(os.Stderr) {
			bar := newProgressBar(cl.stderr)
			r.Progress = func(done, total int, j sweep.Job) {
				bar.show(float64(done)/float64(max(total, 1)), fmt.Sprintf("%d/%d runs  %s", done, total, j), false)
			}
			defer bar.done()
		}
		start := time.Now()
		out, err := r.Run(cmd.Context())
		took := time.Since(start)
		fmt.Fprintf(cl.stdout, "sweep %s shard %d/%d: %d jobs, %d runs recorded, %d already stored, in %s (%s)\n",
			id, i, n, out.Jobs, out.Runs, out.Skipped, took.Round(time.Millisecond), st.Location())
		return err
	})
	cmd.AddCommand(cl.sweepStatus())
	return cmd
}

func (cl *cli) sweepStatus() *cobra.Command {
	var sf sweepFlags
	cmd := &cobra.Command{
		Use:   "status FILE",
		Short: "How far a sweep is: runs stored per shard, and its Job's pods with --on kubernetes",
		Example: `  shoal sweep status bench/sweeps/distr-lb.yaml
  shoal sweep status bench/sweeps/distr-lb.yaml --on kubernetes --shards 8 --db postgres://shoal@db/shoal`,
		Args: exactArgs(1, "one sweep file"),
	}
	sf.register(cmd)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		spec, id, err := sf.load(args[0])
		if err != nil {
			return err
		}
		shards := 1
		if sf.on == "kubernetes" {
			shards = sf.kube.Shards
			if err := cl.jobStatus(cmd.Context(), &sf, id); err != nil {
				return err
			}
		}
		st, err := openStore(cmd.Context(), sf.db)
		if err != nil {
			return err
		}
		defer st.Close()
		r := &sweep.Runner{Spec: spec, Store: st, ID: id, Shards: shards}
		status, err := r.Status(cmd.Context())
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(cl.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "shard\truns\tstored")
		runs, stored := 0, 0
		for _, s := range status {
			fmt.Fprintf(w, "%d/%d\t%d\t%d\n", s.Shard, shards, s.Runs, s.Stored)
			runs, stored = runs+s.Runs, stored+s.Stored
		}
		fmt.Fprintf(w, "all\t%d\t%d\n", runs, stored)
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "sweep %s: %d of %d runs stored in %s\n", id, stored, runs, st.Location())
		return nil
	})
	return cmd
}

// kubeClient connects to the cluster of a kubeconfig (see kubeConfig).
func kubeClient(kubeconfig string) (client.Client, error) {
	cfg, err := kubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{})
}

// submitSweep creates the sweep's ConfigMap and Indexed Job.
func (cl *cli) submitSweep(ctx context.Context, sf *sweepFlags, spec *sweep.Spec, id string) error {
	sf.kube.ID = id
	if sf.kube.DBSecret == "" {
		dsn, err := store.DSN(sf.db)
		if err != nil {
			return err
		}
		sf.kube.DB = dsn
	}
	cm, job, err := sf.kube.Objects(spec)
	if err != nil {
		return usagef("%v", err)
	}
	c, err := kubeClient(sf.kubeconfig)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, cm); err != nil {
		return fmt.Errorf("create configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if err := c.Create(ctx, job); err != nil {
		return fmt.Errorf("create job %s/%s: %w", job.Namespace, job.Name, err)
	}
	fmt.Fprintf(cl.stdout, "submitted job %s/%s: %d shards, %d at once; follow it with 'shoal sweep status FILE --on kubernetes --shards %d'\n",
		job.Namespace, job.Name, *job.Spec.Completions, *job.Spec.Parallelism, *job.Spec.Completions)
	return nil
}

// jobStatus prints the sweep's Job: its pods and completed indexes.
func (cl *cli) jobStatus(ctx context.Context, sf *sweepFlags, id string) error {
	c, err := kubeClient(sf.kubeconfig)
	if err != nil {
		return err
	}
	var job batchv1.Job
	key := client.ObjectKey{Namespace: sf.kube.Namespace, Name: sweep.JobName(id)}
	if err := c.Get(ctx, key, &job); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no job %s (was the sweep submitted with --on kubernetes?)", key)
		}
		return err
	}
	fmt.Fprintln(cl.stdout, sweep.DescribeJob(&job))
	return nil
}

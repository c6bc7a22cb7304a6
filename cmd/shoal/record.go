package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/prom"
	"github.com/shoal-project/shoal/record"
	"github.com/spf13/cobra"
)

func (cl *cli) recordCmd() *cobra.Command {
	var (
		prometheus, start, end, namespace string
		ingress, name, out, queries       string
		services, calls                   []string
		step                              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "record --prometheus URL --start T --service NAME=DEPLOYMENT[:CONTAINER]... -o DIR",
		Short: "Record a cluster's traffic from Prometheus as a scenario 'shoal sim' replays",
		Long: `Read a live cluster's Prometheus over a time range and write a scenario that
'shoal sim' replays, so controllers can be trained and compared on your own
traffic. DIR gets two files:

  arrivals.txt   the ingress service's requests in each second of the range
                 (the NASA trace format), from its request rate in each --step
  scenario.yaml  the services with the replicas and CPU and memory limits they
                 had at --start, one request class whose calls start at the
                 ingress, and a source replaying arrivals.txt (looped)

Each service's CPU demand per call is calibrated as the CPU seconds it used over
the range divided by the calls it completed. Prometheus does not hold the call
graph: by default the ingress calls every other service, each as many times per
request as their request counts' ratio; --call CALLER=CALLEE gives a tree
instead. I/O and network time, concurrency limits and cold starts are not
recorded; the file's header says so, and lists what was measured.

The series are those of a Kubernetes cluster with kube-state-metrics (replicas,
limits), cAdvisor (CPU use) and Istio (requests, reported by the destination).
CONTAINER defaults to DEPLOYMENT. Each --step must hold two scrapes of the
request series (with a 30 s scrape interval, use --step 1m).

Times are RFC 3339 (2026-01-02T15:04:05Z), Unix seconds, now, or relative to
now (-1h, now-90m).`,
		Example: `  shoal record --prometheus http://127.0.0.1:9090 --start -1h --namespace shop \
      --service front=frontend --service cart=cartservice:server --ingress front -o rec
  shoal sim rec/scenario.yaml --policy static,hpa
  shoal record --prometheus http://prometheus:9090 --start 2026-01-02T08:00:00Z --end 2026-01-02T20:00:00Z \
      --step 1m --service web=web --service api=api --service db=db --call web=api --call api=db -o day`,
		Args: exactArgs(0, "no arguments"),
	}
	f := cmd.Flags()
	f.StringVar(&prometheus, "prometheus", "", "the Prometheus server's `URL` (required)")
	f.StringVar(&start, "start", "", "the range's start `TIME` (required)")
	f.StringVar(&end, "end", "now", "the range's end `TIME`")
	f.DurationVar(&step, "step", 15*time.Second, "the arrivals' resolution, whole seconds")
	f.StringVar(&queries, "queries", "istio", "where request metrics come from: istio, shoal-proxy (its series labelled namespace and service=the Deployment), or a YAML `FILE` of PromQL templates")
	f.StringVar(&namespace, "namespace", "default", "the services' Kubernetes `NAMESPACE`")
	f.StringArrayVar(&services, "service", nil, "a service and its workload, `NAME=DEPLOYMENT[:CONTAINER]` (once per service; required)")
	f.StringVar(&ingress, "ingress", "", "the service requests enter, a `NAME` (default: the first --service)")
	f.StringArrayVar(&calls, "call", nil, "a call-graph edge, `CALLER=CALLEE` (repeat; services no edge calls are called by the ingress)")
	f.StringVar(&name, "name", "", "the scenario's `NAME` (default: DIR's base name)")
	f.StringVarP(&out, "output", "o", "", "the `DIR` to write arrivals.txt and scenario.yaml to (required)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, _ []string) error {
		now := time.Now()
		cfg, err := recordConfig(now, prometheus, start, end, namespace, ingress, queries, services, calls, step)
		if err != nil {
			return err
		}
		if out == "" {
			return usagef("-o DIR is required")
		}
		cfg.Name = name
		if cfg.Name == "" {
			cfg.Name = filepath.Base(filepath.Clean(out))
		}
		rec, err := record.Record(cmd.Context(), cfg)
		if err != nil {
			return recordError(err)
		}
		if err := rec.Write(out); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "%s: %s to %s in steps of %v; %s's requests at %.4g req/s on average\n\n", cfg.Name,
			rec.Start.UTC().Format(time.RFC3339), rec.End.UTC().Format(time.RFC3339), rec.Step, rec.Ingress, rec.MeanRate())
		if err := rec.WriteTable(cl.stdout); err != nil {
			return err
		}
		for _, n := range rec.Notes {
			fmt.Fprintf(cl.stdout, "note: %s\n", n)
		}
		dir := strings.TrimSuffix(out, "/")
		fmt.Fprintf(cl.stdout, "\nwrote %s/{%s,%s}; replay: shoal sim %s/%s\n", dir, record.ScenarioFile, record.TraceFile, dir, record.ScenarioFile)
		return nil
	})
	return cmd
}

// recordConfig turns record's flags into its configuration; each error
// names its flag.
func recordConfig(now time.Time, prometheus, start, end, namespace, ingress, queries string, services, calls []string, step time.Duration) (record.Config, error) {
	q, err := prom.ReadQueries(queries)
	if err != nil {
		return record.Config{}, usagef("--queries: %v", err)
	}
	cfg := record.Config{Prometheus: prometheus, Step: step, Ingress: ingress, Queries: q}
	if start == "" {
		return cfg, usagef("--start TIME is required")
	}
	if cfg.Start, err = parseTime(start, now); err != nil {
		return cfg, usagef("--start: %v", err)
	}
	if cfg.End, err = parseTime(end, now); err != nil {
		return cfg, usagef("--end: %v", err)
	}
	if cfg.End.After(now) {
		return cfg, usagef("--end %s is in the future", cfg.End.Format(time.RFC3339))
	}
	if namespace == "" {
		return cfg, usagef("--namespace must not be empty")
	}
	if len(services) == 0 {
		return cfg, usagef("--service NAME=DEPLOYMENT[:CONTAINER] is required (once per service)")
	}
	for _, s := range services {
		svc, target, ok := strings.Cut(s, "=")
		deploy, container, _ := strings.Cut(target, ":")
		if container == "" {
			container = deploy
		}
		if !ok || svc == "" || deploy == "" || strings.ContainsAny(svc+deploy+container, "=:\"{} ") {
			return cfg, usagef("--service %q: want NAME=DEPLOYMENT[:CONTAINER]", s)
		}
		cfg.Workloads = append(cfg.Workloads, prom.Workload{Service: svc, Namespace: namespace, Name: deploy, Container: container})
	}
	for _, c := range calls {
		caller, callee, ok := strings.Cut(c, "=")
		if !ok || caller == "" || callee == "" {
			return cfg, usagef("--call %q: want CALLER=CALLEE", c)
		}
		cfg.Calls = append(cfg.Calls, record.Edge{Caller: caller, Callee: callee})
	}
	if err := cfg.Validate(); err != nil {
		return cfg, recordError(err)
	}
	return cfg, nil
}

// recordError names the flag of a bad record.Config field.
func recordError(err error) error {
	var ce *record.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	flag := map[string]string{"workloads": "service", "calls": "call"}[ce.Field]
	if flag == "" {
		flag = ce.Field
	}
	return usagef("--%s: %v", flag, ce.Err)
}

// parseTime reads RFC 3339, Unix seconds, now, or a duration before now
// (-1h, now-1h).
func parseTime(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if rel, ok := strings.CutPrefix(s, "now"); ok || strings.HasPrefix(s, "-") {
		if !ok {
			rel = s
		}
		d, err := time.ParseDuration(rel)
		if err != nil || d > 0 || !strings.HasPrefix(rel, "-") {
			return time.Time{}, fmt.Errorf("%q: want a time before now, like now-1h or -1h", s)
		}
		return now.Add(d), nil
	}
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(secs, 0), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-01-02T15:04:05Z), Unix seconds, now or now-1h", s)
	}
	return t, nil
}

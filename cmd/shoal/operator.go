package main

import (
	"fmt"
	"os"
	"time"

	"github.com/shoal-project/shoal/operator"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	"github.com/spf13/cobra"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func (cl *cli) operatorCmd() *cobra.Command {
	var (
		kubeconfig, prometheus        string
		queries                       string
		minWindow                     time.Duration
		metricsAddr, healthAddr       string
		leaderElect, dryRun           bool
		leaderNamespace, leaderLockID string
		qps                           float32
		burst                         int
		namespaces                    []string
	)
	cmd := &cobra.Command{
		Use:   "operator --prometheus URL",
		Short: "Run Shoal's Kubernetes operator: Autoscalers scale workloads from Prometheus",
		Long: `Run Shoal's Kubernetes operator (a controller-runtime manager). Every
Autoscaler (shoal.io/v1alpha1; the CRD is deploy/helm/shoal/crds/shoal.io_autoscalers.yaml)
scales its target workload each period: it reads the workload from Prometheus
(kube-state-metrics, cAdvisor, and Istio's or shoal proxy's request series),
lets its policy decide (hpa: Kubernetes' HPA semantics; drpc: a DRPC policy
file from a ConfigMap or URL, with the HPA as fallback), and acts through the
API: scale subresource, in-place resize, brownout. Every Balancer keeps a
shoal proxy configuration in a ConfigMap (<name>-proxy), its backends the
ready endpoints of its Service, for 'shoal proxy --watch' to follow. With
dryRun (or --dry-run for all) it only reports what it would do, in its status
and events. When Prometheus cannot answer it holds, with the MetricsAvailable
condition false. The permissions it needs are deploy/helm/shoal/files/role.yaml.

It connects with --kubeconfig, else $KUBECONFIG, else in-cluster credentials,
else ~/.kube/config.`,
		Example: `  shoal operator --prometheus http://prometheus.monitoring:9090
  shoal operator --kubeconfig ~/.kube/config --prometheus http://127.0.0.1:9090 --leader-elect=false --dry-run`,
		Args: exactArgs(0, "no arguments"),
	}
	f := cmd.Flags()
	f.StringVar(&prometheus, "prometheus", "", "the Prometheus server's `URL` (required)")
	f.StringVar(&queries, "queries", "istio", "where request metrics come from: istio, shoal-proxy (its series labelled namespace and service=the Deployment), or a YAML `FILE` of PromQL templates")
	f.DurationVar(&minWindow, "min-window", time.Minute, "the shortest PromQL window (a rate needs several scrapes in it: 4 x the scrape interval)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "a kubeconfig `FILE`")
	f.StringVar(&metricsAddr, "metrics-address", "127.0.0.1:8080", "where the operator's own metrics are served (0: nowhere)")
	f.StringVar(&healthAddr, "health-address", "127.0.0.1:8081", "where /healthz and /readyz are served (0: nowhere)")
	f.BoolVar(&leaderElect, "leader-elect", true, "elect a leader among replicas of the operator (a Lease)")
	f.StringVar(&leaderNamespace, "leader-election-namespace", "", "the Lease's namespace (default: the operator's own, in a cluster)")
	f.StringVar(&leaderLockID, "leader-election-id", "shoal-operator.shoal.io", "the Lease's name")
	f.BoolVar(&dryRun, "dry-run", false, "decide and report, act on nothing (shadow mode)")
	f.Float32Var(&qps, "kube-qps", 50, "requests per second to the API server (client-go's default, 5, holds 100 Autoscalers back)")
	f.IntVar(&burst, "kube-burst", 100, "burst of requests to the API server")
	f.StringSliceVar(&namespaces, "namespaces", nil, "watch only these `namespaces`' Autoscalers, RoutePolicies, Balancers and workloads (default: all)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, _ []string) error {
		if prometheus == "" {
			return usagef("--prometheus URL is required")
		}
		if qps <= 0 || burst <= 0 {
			return usagef("--kube-qps and --kube-burst must be positive, got %g and %d", qps, burst)
		}
		var watch cache.Options
		for _, ns := range namespaces {
			if errs := validation.IsDNS1123Label(ns); ns == "" || len(errs) > 0 {
				return usagef("--namespaces: %q is not a namespace name", ns)
			}
			if watch.DefaultNamespaces == nil {
				watch.DefaultNamespaces = map[string]cache.Config{}
			}
			watch.DefaultNamespaces[ns] = cache.Config{}
		}
		q, err := prom.ReadQueries(queries)
		if err != nil {
			return usagef("--queries: %v", err)
		}
		cfg, err := kubeConfig(kubeconfig)
		if err != nil {
			return err
		}
		cfg.QPS, cfg.Burst = qps, burst
		scheme := k8sruntime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := v1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: watch, Metrics: metricsserver.Options{BindAddress: metricsAddr},
			HealthProbeBindAddress: healthAddr, LeaderElection: leaderElect, LeaderElectionID: leaderLockID,
			LeaderElectionNamespace: leaderNamespace, LeaderElectionReleaseOnCancel: true})
		if err != nil {
			return fmt.Errorf("operator: %w", err)
		}
		r := &operator.AutoscalerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg, Recorder: mgr.GetEventRecorder("shoal-operator"),
			Prometheus: prometheus, Queries: &q, MinWindow: minWindow, DryRun: dryRun}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
		// RoutePolicies read Istio's route series by cluster
		// (prom.DefaultRouteQueries): --queries, which is about a
		// workload's own request series, does not apply to them.
		routes := &operator.RoutePolicyReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg, Recorder: mgr.GetEventRecorder("shoal-operator"),
			Prometheus: prometheus, MinWindow: minWindow, DryRun: dryRun}
		if err := routes.SetupWithManager(mgr); err != nil {
			return err
		}
		br := &operator.BalancerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("shoal-operator")}
		if err := br.SetupWithManager(mgr); err != nil {
			return err
		}
		if healthAddr != "0" {
			if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
				return err
			}
		}
		fmt.Fprintf(cl.stderr, "shoal operator: watching Autoscalers at %s, Prometheus %s (dry run: %v)\n", cfg.Host, prometheus, dryRun)
		return mgr.Start(cmd.Context())
	})
	return cmd
}

// kubeConfig is the file's configuration, else $KUBECONFIG's, else the
// in-cluster one, else ~/.kube/config's.
func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, nil
	}
	home, _ := os.UserHomeDir()
	cfg, err := clientcmd.BuildConfigFromFlags("", home+"/.kube/config")
	if err != nil {
		return nil, fmt.Errorf("no cluster: no --kubeconfig, $KUBECONFIG, in-cluster credentials or ~/.kube/config (%w)", err)
	}
	return cfg, nil
}

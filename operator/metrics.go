package operator

import (
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shoal-project/shoal/control"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The operator's own metrics, served on its metrics address beside
// controller-runtime's (deploy/helm/shoal/files/shoal-operator.json charts them).
var (
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_operator_decisions_total",
		Help: "Control periods decided, by controller and who acted: policy, fallback, dry-run or holding (no data)."}, []string{"controller", "acting"})
	actions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_operator_actions_total",
		Help: "Actions, by controller, kind and result: applied, failed or dry-run (reported, not applied)."}, []string{"controller", "action", "result"})
	actionLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shoal_operator_action_latency_seconds",
		Help:    "From the scrape of the newest Prometheus sample a decision read to the API server's acceptance of its action.",
		Buckets: prometheus.ExponentialBuckets(0.025, math.Sqrt2, 20)}, []string{"controller"}) // 25 ms to 18 s
	policyRejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_operator_policy_rejected_total",
		Help: "Policy files that did not load (the policy in force stayed)."}, []string{"controller"})
)

func init() {
	crmetrics.Registry.MustRegister(decisions, actions, actionLatency, policyRejected)
	// Series that exist from the start read 0, not "no data".
	policyRejected.WithLabelValues(autoscalerController)
}

// actionName is an action's kind as a label: SetReplicas, SetResources...
func actionName(a control.Action) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", a), "control.")
}

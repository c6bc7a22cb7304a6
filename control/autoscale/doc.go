// Package autoscale holds the autoscalers that production uses today,
// ported from their upstream sources so that every learned controller is
// measured against them: Kubernetes HPA v2 (hpa.go), Knative KPA (kpa.go),
// the VPA recommender and updater (vpa.go), KEDA's ScaledObject on a
// request rate (keda.go) and the OpenFaaS Pro autoscaler (openfaas.go); a
// static configuration is no controller at all. Each manages one service
// and is a control.Controller: every control
// period it reads the metrics.Snapshot of the period that ended and
// returns control.SetReplicas (or SetResources) actions for the services
// it manages, keeping its own sync period and history, with time as a
// parameter (no wall clock, no I/O).
//
// The usage loop, every control period:
//
//	acts := a.Decide(now, &snap)   // snap: the period that ended at now
//	for _, x := range acts { cluster.Apply(now, x) }
package autoscale

import "time"

// setDefault gives a zero setting its upstream default: as in the upstream
// configurations, an unset field takes the default, so zero cannot be
// asked for where the default is not zero.
func setDefault[T int | float64 | time.Duration | string](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

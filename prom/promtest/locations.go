package promtest

import "fmt"

// Nodes are one cluster's nodes as node_exporter and cAdvisor see them:
// CPUs of which Used cores are busy, Pods of them the containers of
// Namespace's pods (80% the app's, 20% the istio-proxy sidecars').
type Nodes struct {
	Cluster, Namespace string
	CPUs               int
	Used, Pods         float64
}

// LocationSeries returns what node_exporter, cAdvisor and each cluster's
// blackbox prober (its samples relabelled source_cluster and
// destination_cluster) would export s seconds into a test: CPU counters
// growing at the nodes' rates, with a pause container, a container-less
// total and another namespace that the default route queries must leave
// out, and the probes' durations (seconds) by (source, destination).
func LocationSeries(nodes []Nodes, probes map[[2]string]float64) func(s float64) []string {
	return func(s float64) []string {
		var out []string
		for _, n := range nodes {
			busy := n.Used / float64(n.CPUs)
			for c := range n.CPUs {
				out = append(out, fmt.Sprintf(`node_cpu_seconds_total{cpu="%d",mode="idle",cluster=%q} %g`, c, n.Cluster, s*(1-busy)),
					fmt.Sprintf(`node_cpu_seconds_total{cpu="%d",mode="user",cluster=%q} %g`, c, n.Cluster, s*busy))
			}
			for _, ctr := range []struct {
				ns, container string
				share         float64
			}{{n.Namespace, "app", 0.8}, {n.Namespace, "istio-proxy", 0.2}, {n.Namespace, "POD", 0.5}, {n.Namespace, "", 1}, {"other-" + n.Namespace, "app", 0.7}} {
				out = append(out, fmt.Sprintf(`container_cpu_usage_seconds_total{namespace=%q,pod="p",container=%q,cluster=%q} %g`, ctr.ns, ctr.container, n.Cluster, s*ctr.share*n.Pods))
			}
		}
		for pair, d := range probes {
			out = append(out, fmt.Sprintf(`probe_duration_seconds{source_cluster=%q,destination_cluster=%q} %g`, pair[0], pair[1], d))
		}
		return out
	}
}

package experiment

import (
	"math"
	"slices"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/experiment/report"
)

// timeFigures are the report's figures over time (first seed): end-to-end
// latency and SLO violations per policy, then per service, in one panel per
// policy, the replicas, CPU limits and response times of the services
// that some policy scaled.
func (r *Result) timeFigures() []report.Figure {
	if len(r.Policies) == 0 || len(r.Policies[0].Series.Times) == 0 {
		return nil
	}
	e2e := report.Figure{Title: "End-to-end response time over time (first seed)", XLabel: "time (s)", YLabel: "mean response time (s)", LogY: true,
		Caption: "Mean response time of the requests completed successfully, in windows of 1/100 of the run; one line per policy."}
	failed := report.Figure{Title: "Failed requests and SLO violations over time (first seed)", XLabel: "time (s)", YLabel: "requests per second",
		Caption: "Requests that failed (any kind), and requests that failed or were slower than their class's SLO, per second, in windows of 1/100 of the run."}
	for i := range r.Policies {
		p := &r.Policies[i]
		t := p.Series.Times
		x, y := windowMeans(t, p.Requests.Latency, 100)
		e2e.Series = append(e2e.Series, report.Series{Name: p.Policy, X: x, Y: y})
		x, y = windowMeans(t, p.Requests.Failed, 100)
		failed.Series = append(failed.Series, report.Series{Name: p.Policy + " failed", X: x, Y: y})
		if anyPositive(p.Requests.Violated) {
			x, y = windowMeans(t, p.Requests.Violated, 100)
			failed.Series = append(failed.Series, report.Series{Name: p.Policy + " SLO violations", X: x, Y: y})
		}
	}
	figs := []report.Figure{e2e, failed}
	scaled := r.scaledServices()
	if len(scaled) == 0 {
		return figs
	}
	per := func(title, ylabel, caption string, logY bool, values func(s *cluster.ServiceSeries) []float64) report.Figure {
		f := report.Figure{Title: title, XLabel: "time (s)", YLabel: ylabel, LogY: logY, Caption: caption}
		for i := range r.Policies {
			p := &r.Policies[i]
			panel := report.Figure{Title: p.Policy}
			for _, k := range scaled {
				x, y := windowMeans(p.Series.Times, values(&p.Services[k].Series), 200)
				panel.Series = append(panel.Series, report.Series{Name: p.Services[k].Name, X: x, Y: y})
			}
			f.Panels = append(f.Panels, panel)
		}
		return f
	}
	note := "; one line per service that some policy scaled or resized"
	figs = append(figs, per("Replicas over time (first seed)", "replicas", "Instances that exist (starting or ready), in windows of 1/200 of the run"+note, false,
		func(s *cluster.ServiceSeries) []float64 { return s.Replicas }))
	if r.resized() {
		figs = append(figs, per("CPU limit per instance over time (first seed)", "cores", "Per-instance CPU limit"+note, false,
			func(s *cluster.ServiceSeries) []float64 { return s.CPU }))
	}
	figs = append(figs,
		per("Service response time over time (first seed)", "mean response time (s)", "Mean response time of the service's calls (downstream calls included), in windows of 1/200 of the run"+note, true,
			func(s *cluster.ServiceSeries) []float64 { return s.Latency }),
	)
	return figs
}

// scaledServices are the indices of the services whose replicas or limits
// changed in the first seed of some policy.
func (r *Result) scaledServices() []int {
	var idx []int
	for k := range r.Policies[0].Services {
		for i := range r.Policies {
			s := &r.Policies[i].Services[k].Series
			if varies(s.Replicas) || varies(s.CPU) || varies(s.MemoryMB) {
				idx = append(idx, k)
				break
			}
		}
	}
	return idx
}

// resized reports whether some policy changed a CPU limit in its first seed.
func (r *Result) resized() bool {
	for i := range r.Policies {
		for k := range r.Policies[i].Services {
			if varies(r.Policies[i].Services[k].Series.CPU) {
				return true
			}
		}
	}
	return false
}

func varies(x []float64) bool {
	return len(x) > 0 && slices.ContainsFunc(x, func(v float64) bool { return v != x[0] })
}

func anyPositive(x []float64) bool {
	return slices.ContainsFunc(x, func(v float64) bool { return v > 0 })
}

// windowMeans averages a time series over about n equal windows, returning
// each window's end time and mean; NaN values (no data) are skipped, and a
// window with no data gives no point.
func windowMeans(t, v []float64, n int) (x, y []float64) {
	w := max(1, (len(t)+n-1)/n)
	for i := 0; i < len(t) && i < len(v); i += w {
		end := min(i+w, len(t), len(v))
		sum, k := 0.0, 0
		for _, e := range v[i:end] {
			if !math.IsNaN(e) {
				sum += e
				k++
			}
		}
		if k > 0 {
			x = append(x, t[end-1])
			y = append(y, sum/float64(k))
		}
	}
	return x, y
}

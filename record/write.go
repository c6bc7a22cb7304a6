package record

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/scenario"
	"go.yaml.in/yaml/v3"
)

// The files Write makes.
const (
	TraceFile    = "arrivals.txt"
	ScenarioFile = "scenario.yaml"
)

// Write writes the arrivals trace and the scenario into dir (made if
// missing), then loads the scenario back, so what it writes is a scenario
// `shoal sim` runs.
func (r *Recording) Write(dir string) error {
	body, err := r.Scenario()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, TraceFile), r.Trace(), 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	path := filepath.Join(dir, ScenarioFile)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if _, err := scenario.Load(path); err != nil {
		return fmt.Errorf("record: the scenario written does not load: %w", err)
	}
	return nil
}

// Trace is the arrivals trace in the NASA format workload reads: the
// requests in each second of the range, whitespace-separated (a minute a
// line). Each step's seconds share its requests, rounded so that the
// running total never drifts by more than half a request.
func (r *Recording) Trace() []byte {
	var b bytes.Buffer
	secs := int(r.Step / time.Second)
	cum, done := 0.0, 0.0
	k := 0
	for _, rate := range r.Rates {
		for range secs {
			cum += rate
			c := math.Round(cum)
			if k > 0 {
				if k%60 == 0 {
					b.WriteByte('\n')
				} else {
					b.WriteByte(' ')
				}
			}
			b.WriteString(strconv.FormatFloat(c-done, 'f', 0, 64))
			done = c
			k++
		}
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// The scenario file's shape: the fields of scenario.Scenario that a
// recording sets, in the order a reader wants them.
type (
	yFile struct {
		Name          string     `yaml:"name"`
		Description   string     `yaml:"description"`
		Seed          uint64     `yaml:"seed"`
		Seeds         int        `yaml:"seeds"`
		Horizon       string     `yaml:"horizon"`
		ControlPeriod string     `yaml:"control_period"`
		Policies      []string   `yaml:"policies,flow"`
		Services      []yService `yaml:"services"`
		Classes       []yClass   `yaml:"classes"`
		Sources       []ySource  `yaml:"sources"`
	}
	yService struct {
		Name        string  `yaml:"name"`
		Replicas    int     `yaml:"replicas"`
		MinReplicas int     `yaml:"min_replicas"`
		MaxReplicas int     `yaml:"max_replicas"`
		CPU         float64 `yaml:"cpu,omitempty"`
		MemoryMB    float64 `yaml:"memory_mb,omitempty"`
	}
	yClass struct {
		Name string `yaml:"name"`
		Call yCall  `yaml:"call"`
	}
	yCall struct {
		Service string   `yaml:"service"`
		Prob    float64  `yaml:"prob,omitempty"`
		CPU     *yDist   `yaml:"cpu,omitempty,flow"`
		Stages  []yStage `yaml:"stages,omitempty"`
	}
	yDist struct {
		Dist string  `yaml:"dist"`
		Mean float64 `yaml:"mean"`
	}
	yStage struct {
		Calls []yCall `yaml:"calls"`
	}
	ySource struct {
		Name     string  `yaml:"name"`
		Class    string  `yaml:"class"`
		Arrivals yReplay `yaml:"arrivals,flow"`
	}
	yReplay struct {
		Kind   string `yaml:"kind"`
		Trace  string `yaml:"trace"`
		Format string `yaml:"format"`
		Bin    string `yaml:"bin"`
		Loop   bool   `yaml:"loop"`
	}
)

// sig rounds x to 4 significant digits, for a file people read.
func sig(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return v
}

// maxCalls bounds the calls a request makes in the scenario written.
const maxCalls = 10000

// calls is how many calls a request to s makes at most, itself included.
func calls(s *Service, children map[string][]*Service) float64 {
	n := 1.0
	for _, ch := range children[s.Service] {
		n += math.Ceil(sig(ch.PerCall)) * calls(ch, children)
	}
	return n
}

// call is the call of s, with its callees' stages.
func call(s *Service, children map[string][]*Service) yCall {
	c := yCall{Service: s.Service}
	if d := sig(s.Demand); d > 0 {
		c.CPU = &yDist{Dist: "exp", Mean: d}
	}
	for _, ch := range children[s.Service] {
		sub := call(ch, children)
		per := sig(ch.PerCall)
		whole := math.Floor(per)
		for range int(whole) {
			c.Stages = append(c.Stages, yStage{Calls: []yCall{sub}})
		}
		if frac := sig(per - whole); frac > 0 {
			sub.Prob = frac
			c.Stages = append(c.Stages, yStage{Calls: []yCall{sub}})
		}
	}
	return c
}

// Scenario is the scenario file: the services, one request class whose
// call tree starts at the ingress, and a source replaying TraceFile from
// the file's folder. Its header comment says where every number comes
// from.
func (r *Recording) Scenario() ([]byte, error) {
	children := map[string][]*Service{}
	for i := range r.Services {
		s := &r.Services[i]
		if s.Caller != "" {
			children[s.Caller] = append(children[s.Caller], s)
		}
	}
	in := r.service(r.Ingress)
	if in == nil {
		return nil, fmt.Errorf("record: no ingress service %q", r.Ingress)
	}
	if n := calls(in, children); n > maxCalls {
		return nil, fmt.Errorf("record: a request would make %g calls (calls per call multiply down the tree), more than %d: give the call graph", n, maxCalls)
	}
	root := call(in, children)
	span := r.End.Sub(r.Start)
	f := yFile{
		Name: r.Name,
		Description: fmt.Sprintf("Recorded from Prometheus over %s to %s: %d services, %s's requests at %.4g req/s on average",
			r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), len(r.Services), r.Ingress, r.MeanRate()),
		Seed: 1, Seeds: 3, Horizon: duration(span), ControlPeriod: "1s",
		Policies: []string{"static", "hpa"},
		Classes:  []yClass{{Name: "requests", Call: root}},
		Sources: []ySource{{Name: "recorded", Class: "requests", Arrivals: yReplay{Kind: "trace", Trace: TraceFile, Format: "nasa",
			Bin: duration(r.Step), Loop: true}}},
	}
	for _, s := range r.Services {
		f.Services = append(f.Services, yService{Name: s.Service, Replicas: s.Replicas, MinReplicas: 1, MaxReplicas: max(2, 2*s.MaxReplicas),
			CPU: sig(s.CPULimit), MemoryMB: sig(s.MemoryLimit)})
	}
	var b bytes.Buffer
	r.header(&b)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return b.Bytes(), nil
}

// WriteTable writes the calibration: per service its replicas and CPU
// limit, calls per second and cores used over the range, the CPU demand
// of a call, and the calls per call of its caller.
func (r *Recording) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\treplicas\tcpu limit\tcalls/s\tcpu (cores)\tdemand (ms)\tcalls per call of")
	secs := r.End.Sub(r.Start).Seconds()
	for _, s := range r.Services {
		limit := strconv.FormatFloat(s.CPULimit, 'g', 4, 64)
		if s.CPULimit == 0 {
			limit = "none (1)"
		}
		per := "-"
		if s.Caller != "" {
			per = fmt.Sprintf("%.4g %s", s.PerCall, s.Caller)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.4g\t%.4g\t%.4g\t%s\n", s.Service, s.Replicas, limit, s.Calls/secs, s.CPUSeconds/secs, 1000*s.Demand, per)
	}
	return tw.Flush()
}

// duration is d as a scenario file writes it (1h, 90s).
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// header is the scenario file's comment: provenance, the calibration
// table and what is not recorded.
func (r *Recording) header(b *bytes.Buffer) {
	line := func(format string, a ...any) {
		fmt.Fprintln(b, strings.TrimRight("# "+fmt.Sprintf(format, a...), " "))
	}
	line("Recorded by 'shoal record' from the Prometheus at %s over", r.Prometheus)
	line("%s to %s (%v), in steps of %v.", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), r.End.Sub(r.Start), r.Step)
	line("")
	line("Arrivals: %s's requests in each step, replayed from %s", r.Ingress, TraceFile)
	line("(requests in each second), Poisson within a step, looped past the range (a")
	line("longer --horizon repeats it). Services: replicas and limits as at the start;")
	line("max_replicas is twice the most replicas seen, room for an autoscaler. A call's")
	line("CPU demand (core-seconds) is exponential around the service's CPU seconds over")
	line("the range divided by its calls completed. The call graph is a tree from the")
	line("ingress: a callee is called, per call of its caller, the ratio of their calls")
	line("(2.5: two calls, then one with probability 0.5).")
	line("")
	var t bytes.Buffer
	r.WriteTable(&t)
	for _, l := range strings.Split(strings.TrimSuffix(t.String(), "\n"), "\n") {
		line("%s", strings.TrimRight(l, " "))
	}
	line("")
	line("Not recorded: I/O, network and database time (replayed response times are")
	line("CPU work alone), concurrency limits, queues and cold starts; edit them in.")
	for _, n := range r.Notes {
		line("Note: %s.", n)
	}
}

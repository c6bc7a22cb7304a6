package drpc

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/metrics"
)

// overSnapshot is testSnapshot with per-pod CPU use, which the HPA reads:
// every ready pod at utilisation u.
func overSnapshot(at time.Duration, replicas [2]int, u float64) *metrics.Snapshot {
	s := testSnapshot(at, 100)
	for k := range s.Services {
		svc := &s.Services[k]
		svc.Replicas, svc.Ready = replicas[k], replicas[k]
		svc.Instances = make([]metrics.InstanceStats, replicas[k])
		for i := range svc.Instances {
			svc.Instances[i] = metrics.InstanceStats{ID: i, Ready: true, Utilisation: u, CPUUse: u * svc.CPULimit}
		}
		svc.CPUUse = u * svc.CPULimit * float64(replicas[k])
	}
	return s
}

// replicaTrace runs ctl over eight minutes of snapshots, busy (90% CPU)
// for one minute then quiet (20%), applying its replica changes, and
// returns them.
func replicaTrace(ctl control.Controller) []string {
	replicas := [2]int{2, 3}
	var out []string
	for sec := 1; sec <= 480; sec++ {
		u := 0.9
		if sec > 60 {
			u = 0.2
		}
		now := time.Duration(sec) * time.Second
		for _, a := range ctl.Decide(now, overSnapshot(now, replicas, u)) {
			if r, ok := a.(control.SetReplicas); ok {
				k := slices.Index([]string{"front", "back"}, r.Service)
				replicas[k] = r.Replicas
				out = append(out, fmt.Sprintf("%v %s=%d", now, r.Service, r.Replicas))
			}
		}
	}
	return out
}

// hpas is the reference: upstream's HPA (control/autoscale) at a CPU
// target, one per deployment of testPolicy.
type hpas []*autoscale.HPA

func newHPAs(t *testing.T, target float64) hpas {
	var hs hpas
	for _, name := range []string{"front", "back"} {
		h, err := autoscale.NewHPA(autoscale.HPAConfig{Service: name, MinReplicas: 1, MaxReplicas: 10,
			Metrics: []autoscale.HPAMetric{{Kind: autoscale.MetricCPU, Target: target}}})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return hs
}

func (hs hpas) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	var acts []control.Action
	for _, h := range hs {
		acts = append(acts, h.Decide(now, snap)...)
	}
	return acts
}

// TestOverHPAIsTheHPAItSteers: a policy over the HPA whose networks output
// 0 scales exactly as the HPA at its target does; one whose replicas
// output is 1 scales as the HPA at half the target, and one whose output
// is -1 as the HPA at its cap (95%, or the one set).
func TestOverHPAIsTheHPAItSteers(t *testing.T) {
	for _, tc := range []struct {
		bias   float32 // every student's replicas output is tanh(bias)
		cap    float64
		target float64
	}{{0, 0, 60}, {20, 0, 30}, {-20, 0, 95}, {-20, 60, 60}} {
		p := testPolicy(t)
		p.OverHPA = &OverHPA{Target: 60, Range: 1, Cap: tc.cap}
		for i := range p.Deployments {
			params := p.Student(i).Params()
			for _, w := range params {
				clear(w.Value.Data)
			}
			params[len(params)-1].Value.Data[aReplicas] = tc.bias
		}
		ctl, err := NewController(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, want := replicaTrace(ctl), replicaTrace(newHPAs(t, tc.target))
		if len(want) < 2 || !slices.Equal(got, want) {
			t.Errorf("replicas output tanh(%v), cap %v: the policy scaled %v; the HPA at %v%% scaled %v", tc.bias, tc.cap, got, tc.target, want)
		}
	}
}

// TestOverHPASettingIsChecked: a policy file's over_hpa is validated, and
// a policy acts over a base rule or an HPA, not both.
func TestOverHPASettingIsChecked(t *testing.T) {
	for _, o := range []*OverHPA{{Target: 0, Range: 1}, {Target: 60, Range: -1}, {Target: 60, Range: 1, Cap: 50}} {
		p := testPolicy(t)
		p.OverHPA = o
		if err := p.init(nil); err == nil {
			t.Errorf("over_hpa %+v accepted", *o)
		}
	}
	p := testPolicy(t)
	p.OverHPA, p.Base = &OverHPA{Target: 60, Range: 1}, &Base{Low: 0.3, High: 0.75}
	if err := p.init(nil); err == nil {
		t.Error("a policy with a base rule and over_hpa accepted")
	}
}

package experiment

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/envs/lbenv"
)

// The Distr-LB issue's experiments (shared/papers/distr-lb-markov-potential-game.txt, section 4).
var (
	// distrLB is the paper's proposal with both of its rewards.
	distrLB = []LBLearner{
		{Name: "distr-lb/vbf", Algorithm: lbenv.DistrLB, Reward: lb.VBF},
		{Name: "distr-lb/vbf+log", Algorithm: lbenv.DistrLB, Reward: lb.VBFLog},
	}
	// comparisons are the paper's learned comparisons (Table 3).
	comparisons = []LBLearner{
		{Name: "centr-lb/vbf", Algorithm: lbenv.CentrLB, Reward: lb.VBF},
		{Name: "qmix-lb/vbf", Algorithm: lbenv.QMixLB, Reward: lb.VBF},
		{Name: "qmix-lb/pbf", Algorithm: lbenv.QMixLB, Reward: lb.PBF},
	}
	classical = []string{"ecmp", "wcmp", "lsq", "sed", "p2c"}
)

// DistrLBStudies returns the Distr-LB experiments by name:
//
//	table3         moderate setup (2 LBs x 7 servers), three application mixes, all learners (paper Table 3)
//	misconfigured  moderate setup with configured weights that do not match the servers, load 0.85 and 0.95
//	large          6 LBs x 20 servers with Wikipedia traffic, load 0.85 and 0.95 (paper Table 4)
//	sweep          the large setup from load 0.5 to 0.95 with policies trained at 0.85 (paper Tables 5, 6)
//	ablation       moderate 100%-CPU setup: the five rewards, Distr-LB without its GRU (paper App. E.2.1),
//	               and with the paper's duration-based reward input instead of the backlog estimate
func DistrLBStudies() map[string]LBStudy {
	base := append(append([]string(nil), classical...), "oracle")
	all := append(append([]LBLearner(nil), distrLB...), comparisons...)
	return map[string]LBStudy{
		"table3": {Name: "table3", Learners: all, Baselines: base, Cases: []LBCase{
			{Scenario: "lb-moderate-50cpu"}, {Scenario: "lb-moderate-75cpu"}, {Scenario: "lb-moderate-cpu"}}},
		"misconfigured": {Name: "misconfigured", Learners: distrLB, Baselines: base, Cases: []LBCase{
			{Scenario: "lb-moderate-misconfigured", Load: 0.85}, {Scenario: "lb-moderate-misconfigured", Load: 0.95}}},
		"large": {Name: "large", Learners: distrLB, Baselines: base, Cases: []LBCase{
			{Scenario: "lb-large-wiki", Load: 0.85}, {Scenario: "lb-large-wiki", Load: 0.95}}},
		"sweep": {Name: "sweep", Learners: distrLB[:1], Baselines: base, Cases: sweep("lb-large-wiki", 0.85, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)},
		"ablation": {Name: "ablation", Baselines: []string{"sed", "oracle"}, Cases: []LBCase{{Scenario: "lb-moderate-cpu"}}, Learners: []LBLearner{
			{Name: "distr-lb/vbf", Algorithm: lbenv.DistrLB, Reward: lb.VBF},
			{Name: "distr-lb/vbf+log", Algorithm: lbenv.DistrLB, Reward: lb.VBFLog},
			{Name: "distr-lb/jain", Algorithm: lbenv.DistrLB, Reward: lb.Jain},
			{Name: "distr-lb/pbf", Algorithm: lbenv.DistrLB, Reward: lb.PBF},
			{Name: "distr-lb/makespan", Algorithm: lbenv.DistrLB, Reward: lb.Makespan},
			{Name: "distr-lb/vbf/no-gru", Algorithm: lbenv.DistrLB, Reward: lb.VBF, NoGRU: true},
			{Name: "distr-lb/vbf/duration", Algorithm: lbenv.DistrLB, Reward: lb.VBF, Estimate: lb.EstimateDuration},
		}},
	}
}

func sweep(sc string, train float64, loads ...float64) []LBCase {
	var cs []LBCase
	for _, l := range loads {
		cs = append(cs, LBCase{Scenario: sc, Load: l, TrainLoad: train})
	}
	return cs
}

// LookupDistrLBStudy returns the named study, or an error listing them.
func LookupDistrLBStudy(name string) (LBStudy, error) {
	all := DistrLBStudies()
	if s, ok := all[name]; ok {
		return s, nil
	}
	var names []string
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return LBStudy{}, fmt.Errorf("unknown distr-lb experiment %q (known: %s, all)", name, strings.Join(names, ", "))
}

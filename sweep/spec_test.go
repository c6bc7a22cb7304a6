package sweep

import (
	"slices"
	"strings"
	"testing"
)

// TestDecodeNamesBadFields: every bad field is named, unknown fields too.
func TestDecodeNamesBadFields(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"name: a b\nscenarios: [x]\npolicies: [sed]", "name:"},
		{"name: a\npolicies: [sed]", "scenarios: want at least one"},
		{"name: a\nscenarios: [x]", "policies: want at least one"},
		{"name: a\nscenarios: [x]\npolicies: [sed]\nloads: [0.5, 0]", "loads[1]"},
		{"name: a\nscenarios: [x]\npolicies: [sed:f.slb]", "policies[0]"},
		{"name: a\nscenarios: [x]\npolicies: [sed, distr-lb:f.slb]", "policies[1]: \"distr-lb:f.slb\": a policy file belongs in a train step"},
		{"name: a\nscenarios: [x]\npolicies: [hpa:target=0]", "policies[0]: policy hpa: parameter target must be"},
		{"name: a\nscenarios: [x]\ntrain: [{learner: drpc}]", "train[0].learner"},
		{"name: a\nscenarios: [x]\ntrain: [{learner: qmix-lb, as: [distr-lb+probing]}]", "train[0].as"},
		{"name: a\nscenarios: [x]\npolicies: [sed]\nseedz: 3", "seedz"},
	} {
		_, err := Decode([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.yaml, err, c.want)
		}
	}
}

// A range in a policy's settings is one job per setting.
func TestPolicyRangesExpand(t *testing.T) {
	s, err := Decode([]byte("name: k\nscenarios: [trainticket]\npolicies: [hpa:target=30..90/30, kpa]"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range s.Jobs() {
		got = append(got, j.Policy)
	}
	if want := []string{"hpa:target=30", "hpa:target=60", "hpa:target=90", "kpa"}; !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
}

// TestShardsPartitionTheJobs: the shards of any n hold every job once, in
// the sweep's order.
func TestShardsPartitionTheJobs(t *testing.T) {
	s, err := Decode([]byte(`
name: p
scenarios: [a, b, c]
loads: [0.5, 0.9]
policies: [sed, c3, lsq]
train: [{learner: distr-lb, as: [distr-lb, distr-lb+probing]}]`))
	if err != nil {
		t.Fatal(err)
	}
	jobs := s.Jobs()
	if want := 3 * (1 + 2*3); len(jobs) != want {
		t.Fatalf("%d jobs, want %d", len(jobs), want)
	}
	// Training first, spread over the shards; then the evaluations.
	if jobs[0].Train == nil || jobs[0].Scenario != "a" || jobs[2].Train == nil || jobs[2].Scenario != "c" ||
		jobs[3].Policy != "sed" || jobs[3].Load != 0.5 || jobs[3].Scenario != "a" {
		t.Fatalf("order: %v, %v, %v", jobs[0], jobs[2], jobs[3])
	}
	for n := 1; n <= 8; n++ {
		seen := map[int]int{}
		for i := range n {
			last := -1
			for _, j := range Shard(jobs, i, n) {
				if j.Index <= last {
					t.Fatalf("shard %d/%d out of order", i, n)
				}
				last = j.Index
				seen[j.Index]++
			}
		}
		for _, j := range jobs {
			if seen[j.Index] != 1 {
				t.Fatalf("n=%d: job %d in %d shards", n, j.Index, seen[j.Index])
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, ok := range []string{"0/1", "3/4"} {
		if _, _, err := ParseShard(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"4/4", "-1/2", "1", "1/0", "a/b", "1/2x", "01/2"} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

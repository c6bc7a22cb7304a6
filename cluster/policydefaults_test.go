package cluster

import (
	"bytes"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/policy"
)

// The defaults the policy registry lists are the selectors' own: a run with
// every parameter set to its listed default is the run without any, byte
// for byte; and a setting away from the default changes the run (the
// parameter reaches the selector).
func TestRegistryDefaultsAreTheSelectorsDefaults(t *testing.T) {
	opt := Options{Seed: 7, Horizon: 20 * time.Second, Warmup: 2 * time.Second}
	for _, p := range policy.All() {
		if p.Kind != policy.Selector || p.File != policy.NoFile || len(p.Params) == 0 {
			continue
		}
		opt.Policy, opt.Params = p.Name, nil
		plain := runJSON(t, lbFarm(0.9), opt)
		opt.Params = lb.Params{}
		for _, q := range p.Params {
			if q.Default == "" {
				continue // the scenario's or the data plane's
			}
			s, err := policy.Parse(p.Name + ":" + q.Name + "=" + q.Default)
			if err != nil {
				t.Fatal(err)
			}
			opt.Params[q.Name], _ = s.Get(q.Name)
		}
		if !bytes.Equal(plain, runJSON(t, lbFarm(0.9), opt)) {
			t.Errorf("%s with its listed defaults %v runs differently from %s", p.Name, opt.Params, p.Name)
		}
	}
	opt.Policy, opt.Params = "prequal", nil
	plain := runJSON(t, lbFarm(0.9), opt)
	opt.Params = lb.Params{"qrif": 0.5}
	if bytes.Equal(plain, runJSON(t, lbFarm(0.9), opt)) {
		t.Error("prequal:qrif=0.5 runs as prequal does: the parameter did not reach it")
	}
}

package experiment

import (
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/faasconf"
)

// FaaSConfPolicy serves a trained FaaSConf policy: one decision per time
// window (the policy's), every function configured, through the safe
// exploration unless opt turns it off.
func FaaSConfPolicy(p *faasconf.Policy, opt faasconf.Options) Learned {
	return Learned{Period: time.Duration(p.Window), Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		c, err := faasconf.NewController(p, opt)
		if err != nil {
			return nil, err
		}
		return []control.Controller{&timed{Controller: c, per: func() int { return c.Stats().Decisions * len(p.Functions) }}}, nil
	}}
}

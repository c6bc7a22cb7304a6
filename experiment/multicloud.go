package experiment

import (
	"cmp"
	"fmt"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/control/slate"
)

// MultiCloudPolicy routes with BO on a trained policy's models of kind
// "nn", "svr" or "chosen", a fresh controller per run.
func MultiCloudPolicy(p *multicloud.Policy, kind string, opt multicloud.Options) (Learned, error) {
	models, err := p.Models(kind)
	if err != nil {
		return Learned{}, err
	}
	if err := opt.Check(models); err != nil {
		return Learned{}, err
	}
	return Learned{Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		models, err := p.Models(kind)
		if err != nil {
			return nil, err
		}
		return []control.Controller{multicloud.NewController(models, opt)}, nil
	}}, nil
}

// SlateRefined is the SLATE-like optimiser whose solved routes each
// service's learned model (chosen, two-way shifts) may refine by BO
// (slate.Options.Refine), at the egress price (s per GB).
func SlateRefined(p *multicloud.Policy, egress, margin float64) (Learned, error) {
	if p.Shift != multicloud.ShiftTwoWay {
		return Learned{}, fmt.Errorf("slate-refined needs models of two-way shifts ('shoal train multicloud --shift two-way'), not %s", cmp.Or(p.Shift, multicloud.ShiftOneWay))
	}
	if _, err := p.Models(multicloud.KindChosen); err != nil {
		return Learned{}, err
	}
	return Learned{Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		models, err := p.Models(multicloud.KindChosen)
		if err != nil {
			return nil, err
		}
		opt := slate.DefaultOptions()
		opt.EgressWeight, opt.Refine, opt.Margin = egress, models, margin
		return []control.Controller{slate.NewController(opt)}, nil
	}}, nil
}

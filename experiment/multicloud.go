package experiment

import (
	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/multicloud"
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

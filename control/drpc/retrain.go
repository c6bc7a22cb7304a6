package drpc

import (
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
)

// retrainer is Algorithm 1's return to stage 1 after deployment, when the
// notifier fires: the teacher acts for every deployment each period; with
// the policy's critics it explores (Gaussian noise) and learns from the
// periods' rewards as in training (Algorithm 3, rl.TD3 on the policy's own
// actor and critics); every deployment records its states; at the end each
// student imitates the teacher, as it is then, on them (equation 9).
type retrainer struct {
	td3            *rl.TD3 // nil: no critics in the policy; the teacher acts, unchanged
	updates        int     // per period
	x, a           [][]float64
	acted          []bool
	recLocal, recX [][][]float64
	rng            *rand.Rand
}

// retrainBuffer bounds the transitions kept across retraining rounds.
const retrainBuffer = 50_000

func newRetrainer(pol *Policy, opt Options) (*retrainer, error) {
	n := len(pol.Deployments)
	r := &retrainer{x: make([][]float64, n), a: make([][]float64, n), acted: make([]bool, n),
		recLocal: make([][][]float64, n), recX: make([][][]float64, n),
		rng: rand.New(rand.NewPCG(opt.Seed, 0x72657472))} // "retr"
	if ft := pol.FineTune; ft != nil {
		spec := rl.Spec{ID: "drpc/retrain", Observation: rl.UniformBox(TeacherInput(n), -10, 10), Action: rl.UniformBox(ActionDim, -1, 1)}
		cfg := ft.TD3Config(pol.TeacherHidden, retrainBuffer)
		if opt.RetrainNoise > 0 {
			cfg.ActionNoise = opt.RetrainNoise
		}
		var err error
		if r.td3, err = rl.NewTD3On(spec, cfg, pol.teacher, pol.critics, r.rng); err != nil {
			return nil, err
		}
		r.updates = ft.UpdatesPerStep
	}
	return r, nil
}

// learn stores every deployment's transition of the period that ended (its
// teacher input and action then, its reward, its input now) and updates
// the teacher.
func (r *retrainer) learn(pol *Policy, obs *Observer, snap *metrics.Snapshot) {
	if r.td3 == nil {
		return
	}
	qos := obs.AppQoS(pol.Reward)
	in := make([]float32, TeacherInput(len(pol.Deployments)))
	next := make([]float64, len(in))
	for i, ok := range r.acted {
		if !ok {
			continue
		}
		TeacherInputOf(in, obs.Local(i), obs.Global(), i)
		for k, v := range in {
			next[k] = float64(v)
		}
		r.td3.Replay().Add(r.x[i], r.a[i], obs.Reward(pol.Reward, qos, snap, i), next, false)
		r.acted[i] = false
	}
	if r.td3.Replay().Len() >= r.td3.Config.LearningStarts {
		for range r.updates {
			r.td3.Update()
		}
	}
}

// act writes the teacher's action for deployment i (exploring, when it
// learns) to out and records the state.
func (r *retrainer) act(out []float32, i int, local []float64, in []float32, teacher *nn.MLPPredictor[float32]) {
	x := make([]float64, len(in))
	for k, v := range in {
		x[k] = float64(v)
	}
	if r.td3 != nil {
		r.a[i] = append(r.a[i][:0], r.td3.Act(x, false)...)
		for k, v := range r.a[i] {
			out[k] = float32(v)
		}
	} else {
		teacher.Predict(out, in)
	}
	r.x[i], r.acted[i] = x, true
	r.recLocal[i] = append(r.recLocal[i], slices.Clone(local))
	r.recX[i] = append(r.recX[i], x)
}

// refresh fits every student on the states its deployment recorded,
// labelled with the teacher's deterministic action now, and clears them.
func (r *retrainer) refresh(pol *Policy, teacher *nn.MLPPredictor[float32]) {
	spec := rl.Spec{Observation: rl.UniformBox(LocalFeatures, -10, 10), Action: rl.UniformBox(ActionDim, -1, 1)}
	cfg := rl.DefaultBCConfig()
	cfg.Hidden, cfg.Epochs = pol.StudentHidden, 10
	in, out := make([]float32, TeacherInput(len(pol.Deployments))), make([]float32, ActionDim)
	for i := range pol.Deployments {
		if len(r.recLocal[i]) == 0 {
			continue
		}
		labels := make([][]float64, len(r.recX[i]))
		for j, x := range r.recX[i] {
			for k, v := range x {
				in[k] = float32(v)
			}
			teacher.Predict(out, in)
			labels[j] = make([]float64, ActionDim)
			for k, v := range out {
				labels[j][k] = float64(v)
			}
		}
		if b, err := rl.NewBCOn(spec, cfg, pol.students[i], r.rng); err == nil {
			b.Fit(r.recLocal[i], labels) // shapes are the policy's own: cannot fail
		}
		r.recLocal[i], r.recX[i] = r.recLocal[i][:0], r.recX[i][:0]
	}
}

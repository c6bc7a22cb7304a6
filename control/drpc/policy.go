package drpc

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
)

// PolicyFormat names DRPC policy files in their header.
const PolicyFormat = "shoal-drpc-policy"

const policyVersion = 1

// A policy file is one JSON header line (a Policy without its weights)
// followed by one learn/nn parameter file holding the students' weights
// and the teacher's actor, under an architecture string derived from the
// header, so a header that does not match its weights is refused; then,
// as the header says, the workload predictor and the teacher's critics.

// Policy is a trained DRPC policy: one student network per deployment, the
// central teacher's actor, and everything needed to run them.
type Policy struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Algorithm is "drpc".
	Algorithm string `json:"algorithm"`
	// Period is the control period the policy was trained with.
	Period      Duration     `json:"period"`
	Deployments []Deployment `json:"deployments"`
	// Ingress names the services whose response time is the application's.
	Ingress []string `json:"ingress"`
	Steps   Steps    `json:"steps"`
	Reward  Reward   `json:"reward"`
	// StudentHidden and TeacherHidden are the hidden widths of the networks.
	StudentHidden []int `json:"student_hidden"`
	TeacherHidden []int `json:"teacher_hidden"`
	// Low and High bound every local feature as seen in training, widened
	// by a margin; inputs outside them send a deployment to the fallback.
	Low  []float64 `json:"low"`
	High []float64 `json:"high"`
	// Base, if set, makes the policy residual: the networks' outputs are
	// added to the base rule's action.
	Base *Base `json:"base,omitempty"`
	// OverHPA, if set, makes the policy act over an HPA per deployment:
	// the replicas component moves the HPA's target (see OverHPA). A
	// policy has a Base or an OverHPA, not both.
	OverHPA *OverHPA `json:"over_hpa,omitempty"`
	// Forecast is whether a workload predictor (learn/forecast's GRU over
	// the ingress rate) follows the weights in the file; its forecast is
	// the students' and teacher's forecast feature.
	Forecast bool `json:"forecast,omitempty"`
	// Hold, if set, keeps the policy from growing a calm deployment.
	Hold *Hold `json:"hold,omitempty"`
	// Budget, if set, is the cost constraint the policy was trained under.
	Budget *Budget `json:"budget,omitempty"`
	// Notifier is Algorithm 4's setting.
	Notifier NotifierConfig `json:"notifier"`
	// FineTune, if set, is the teacher's TD3 setting, and its critics
	// follow the other weights in the file: when the notifier fires the
	// teacher can explore and learn again (Algorithm 1, line 14, back to
	// stage 1), not only act.
	FineTune *FineTune `json:"fine_tune,omitempty"`
	// Provenance records how the policy was trained.
	Provenance Provenance `json:"provenance"`

	students []*nn.MLP[float32]
	teacher  *nn.MLP[float32]
	critics  []*nn.MLP[float32]
	fc       *forecast.GRUForecaster
}

// NotifierConfig sets the retraining notifier: NPR rewards, threshold TH,
// or TH relative to the first NPR rewards' average (Notifier).
type NotifierConfig struct {
	NPR      int     `json:"npr"`
	TH       float64 `json:"th"`
	Relative float64 `json:"relative,omitempty"`
}

// FineTune is the TD3 setting the teacher was trained with (rl.TD3Config,
// less what a deployment chooses: buffer size and learning start).
type FineTune struct {
	LR             float64 `json:"lr"`
	BatchSize      int     `json:"batch_size"`
	Gamma          float64 `json:"gamma"`
	Tau            float64 `json:"tau"`
	ActionNoise    float64 `json:"action_noise"`
	PolicyDelay    int     `json:"policy_delay"`
	TargetNoise    float64 `json:"target_noise"`
	TargetNoiseCap float64 `json:"target_noise_cap"`
	Critics        int     `json:"critics"`
	UpdatesPerStep int     `json:"updates_per_step"`
}

// NewFineTune records cfg and the updates per decision period.
func NewFineTune(cfg rl.TD3Config, updatesPerStep int) *FineTune {
	return &FineTune{LR: cfg.LR, BatchSize: cfg.BatchSize, Gamma: cfg.Gamma, Tau: cfg.Tau, ActionNoise: cfg.ActionNoise,
		PolicyDelay: cfg.PolicyDelay, TargetNoise: cfg.TargetNoise, TargetNoiseCap: cfg.TargetNoiseCap, Critics: cfg.Critics,
		UpdatesPerStep: updatesPerStep}
}

// TD3Config is the setting as an rl.TD3Config with the teacher's hidden
// widths and the given replay size, learning from the first full batch.
func (f *FineTune) TD3Config(hidden []int, buffer int) rl.TD3Config {
	c := rl.DefaultTD3Config()
	c.Hidden, c.BufferSize, c.LearningStarts = hidden, buffer, f.BatchSize
	c.LR, c.BatchSize, c.Gamma, c.Tau, c.ActionNoise = f.LR, f.BatchSize, f.Gamma, f.Tau, f.ActionNoise
	c.PolicyDelay, c.TargetNoise, c.TargetNoiseCap, c.Critics = f.PolicyDelay, f.TargetNoise, f.TargetNoiseCap, f.Critics
	return c
}

// Provenance records a policy's training.
type Provenance struct {
	Scenario     string  `json:"scenario"`
	Seed         uint64  `json:"seed"`
	Episodes     int     `json:"episodes"`
	EnvSteps     int     `json:"env_steps"`
	Updates      int     `json:"updates"`
	WallSeconds  float64 `json:"wall_seconds"`
	TeacherScore float64 `json:"teacher_score"` // mean reward of the teacher on the validation run
	StudentScore float64 `json:"student_score"` // mean reward of the students on the validation run
	ImitationMSE float64 `json:"imitation_mse"` // the students' mean squared error against the teacher
}

// TeacherInput is the teacher's input length for n deployments: the local
// and global features and a one-hot deployment identity.
func TeacherInput(n int) int { return LocalFeatures + GlobalFeatures + n }

// NewPolicy returns a policy with freshly initialised networks.
func NewPolicy(p Policy, rng *rand.Rand) (*Policy, error) {
	p.Format, p.Version, p.Algorithm = PolicyFormat, policyVersion, "drpc"
	if err := p.init(rng); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Policy) init(rng *rand.Rand) error {
	switch {
	case p.Format != PolicyFormat:
		return fmt.Errorf("format %q, want %s", p.Format, PolicyFormat)
	case p.Version != policyVersion:
		return fmt.Errorf("version %d, this build reads %d", p.Version, policyVersion)
	case len(p.Deployments) == 0:
		return errors.New("deployments: none")
	case len(p.StudentHidden) == 0 || len(p.TeacherHidden) == 0:
		return errors.New("student_hidden, teacher_hidden: need at least one hidden layer each")
	case p.Period <= 0:
		return errors.New("period: must be > 0")
	case p.Base != nil && p.OverHPA != nil:
		return errors.New("base, over_hpa: a policy acts over one of them, not both")
	}
	if p.OverHPA != nil {
		if err := p.OverHPA.validate(); err != nil {
			return err
		}
	}
	if len(p.Low) != LocalFeatures || len(p.High) != LocalFeatures {
		p.Low, p.High = nil, nil // no range recorded: no range check
	}
	p.students = make([]*nn.MLP[float32], len(p.Deployments))
	for i := range p.students {
		p.students[i] = nn.NewMLP[float32](rng, "student", sizes(LocalFeatures, p.StudentHidden, ActionDim), nn.ReLU, nn.Tanh)
	}
	p.teacher = nn.NewMLP[float32](rng, "actor", sizes(TeacherInput(len(p.Deployments)), p.TeacherHidden, ActionDim), nn.ReLU, nn.Tanh)
	if p.FineTune != nil {
		var err error
		if p.critics, err = p.newCritics(p.FineTune, rng); err != nil {
			return err
		}
	}
	return nil
}

func sizes(in int, hidden []int, out int) []int {
	return append(append([]int{in}, hidden...), out)
}

// Student returns deployment i's network.
func (p *Policy) Student(i int) *nn.MLP[float32] { return p.students[i] }

// Teacher returns the central teacher's actor.
func (p *Policy) Teacher() *nn.MLP[float32] { return p.teacher }

// SetTeacher copies the weights of a trained actor of the same shape into
// the policy's teacher.
func (p *Policy) SetTeacher(actor *nn.MLP[float32]) error {
	if actor.Arch() != p.teacher.Arch() {
		return fmt.Errorf("teacher: actor %s, policy wants %s", actor.Arch(), p.teacher.Arch())
	}
	nn.HardCopy(p.teacher.Params(), actor.Params())
	return nil
}

// SetCritics stores the teacher's critics, trained with ft, with the
// policy, so that the teacher can learn again after deployment.
func (p *Policy) SetCritics(critics []*nn.MLP[float32], ft *FineTune) error {
	mine, err := p.newCritics(ft, rand.New(rand.NewPCG(0, 0))) // shapes: the weights are copied below
	if err != nil {
		return err
	}
	if len(critics) != len(mine) {
		return fmt.Errorf("critics: %d given, fine_tune.critics is %d", len(critics), len(mine))
	}
	for i, c := range critics {
		if c.Arch() != mine[i].Arch() {
			return fmt.Errorf("critic %d: %s, the policy wants %s", i+1, c.Arch(), mine[i].Arch())
		}
		nn.HardCopy(mine[i].Params(), c.Params())
	}
	p.critics, p.FineTune = mine, ft
	return nil
}

// Critics returns the teacher's critics (nil when the policy has none).
func (p *Policy) Critics() []*nn.MLP[float32] { return p.critics }

func (p *Policy) newCritics(ft *FineTune, rng *rand.Rand) ([]*nn.MLP[float32], error) {
	if ft.Critics < 1 || ft.Critics > 2 {
		return nil, fmt.Errorf("fine_tune.critics: must be 1 or 2, got %d", ft.Critics)
	}
	critics := make([]*nn.MLP[float32], ft.Critics)
	for i := range critics {
		in := TeacherInput(len(p.Deployments)) + ActionDim
		critics[i] = nn.NewMLP[float32](rng, fmt.Sprintf("q%d", i+1), sizes(in, p.TeacherHidden, 1), nn.ReLU, nn.Identity)
	}
	return critics, nil
}

// SetForecaster stores the workload predictor (one series: the ingress
// rate) with the policy.
func (p *Policy) SetForecaster(fc *forecast.GRUForecaster) {
	p.fc, p.Forecast = fc, fc != nil
}

// Forecaster returns the stored workload predictor, nil without one.
func (p *Policy) Forecaster() *forecast.GRUForecaster { return p.fc }

// Parameters is the number of weights of one student (the paper's has 643).
func (p *Policy) Parameters() int {
	n := 0
	for _, w := range p.students[0].Params() {
		n += len(w.Value.Data)
	}
	return n
}

func (p *Policy) arch() string {
	names := make([]string, len(p.Deployments))
	for i, d := range p.Deployments {
		names[i] = d.Name
	}
	return fmt.Sprintf("%s/v%d students[%s] %s teacher %s", PolicyFormat, policyVersion, strings.Join(names, ","),
		p.students[0].Arch(), p.teacher.Arch())
}

func (p *Policy) state() []*nn.Node[float32] {
	var st []*nn.Node[float32]
	for _, s := range p.students {
		st = append(st, s.Params()...)
	}
	return append(st, p.teacher.Params()...)
}

// Write writes the policy file.
func (p *Policy) Write(w io.Writer) error {
	if err := modelfile.Write(w, p, p.arch(), p.state()); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if p.fc != nil {
		if err := p.fc.Write(w); err != nil {
			return err
		}
	}
	if p.critics == nil {
		return nil
	}
	return nn.Save(w, p.criticsArch(), p.criticState())
}

func (p *Policy) criticsArch() string {
	return fmt.Sprintf("%s/v%d critics %s", PolicyFormat, policyVersion, p.critics[0].Arch())
}

func (p *Policy) criticState() []*nn.Node[float32] {
	var st []*nn.Node[float32]
	for _, c := range p.critics {
		st = append(st, c.Params()...)
	}
	return st
}

// ReadPolicy reads a policy file written by Write.
func ReadPolicy(r io.Reader) (*Policy, error) {
	p := &Policy{}
	br, err := modelfile.Read(r, p, PolicyFormat, func() (string, []*nn.Node[float32], error) {
		if err := p.init(rand.New(rand.NewPCG(0, 0))); err != nil {
			return "", nil, err
		}
		return p.arch(), p.state(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if p.Forecast {
		if p.fc, err = forecast.ReadGRUForecaster(br); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		if p.fc.Dims() != 1 {
			return nil, fmt.Errorf("policy: forecaster of %d series, want 1 (the ingress rate)", p.fc.Dims())
		}
	}
	if p.critics != nil {
		if err := nn.Load(br, p.criticsArch(), p.criticState()); err != nil {
			return nil, fmt.Errorf("policy: critics: %w", err)
		}
	}
	return p, nil
}

// Duration is a time.Duration written as "500ms" in JSON.
type Duration = modelfile.Duration

package edgesched

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
)

// TaskFormat names a per-task rule file.
const TaskFormat = "shoal-edge-task-rule"

// Task is what a per-task rule knows of a task when it chooses where the
// task runs: its scene, its work (Gcycles), input size (MB), deadline and
// its device's local backlog (seconds).
type Task struct {
	Scene                           int
	Work, SizeMB, Deadline, Backlog float64
}

// Option is a target a task may run at, as the platform sees it: its
// estimated completion (s), the jobs queued there and the tasks uploading
// to it.
type Option struct {
	Target        int
	Estimate      float64
	Jobs, Inbound int
}

// TaskRule is a trained per-task rule: a network scores each option of a
// task from its features (Features), the score is added to softmin's,
// −(estimate / best − 1) / Prior, and the option is drawn from their
// softmax (rl.Choice). The file is a JSON header, then the network.
type TaskRule struct {
	Format string `json:"format"`
	// Method is how the rule was made: task-greybox (PPO in a grey-box
	// environment learned from logs), task-real (PPO in the real world)
	// or bc-task (cloned from logged choices).
	Method  string  `json:"method"`
	Targets int     `json:"targets"`
	Scenes  int     `json:"scenes"`
	Hidden  []int   `json:"hidden"`
	Prior   float64 `json:"prior"` // softmin's temperature (0: no prior)
	// Provenance says how the rule was trained.
	Provenance Provenance `json:"provenance"`

	choice       *rl.Choice
	feats, prior []float64
}

// NewTaskRule returns an untrained rule over targets options of tasks of
// scenes scenes, its scores starting at softmin's at temperature prior.
func NewTaskRule(method string, targets, scenes int, prior float64, cfg rl.ChoiceConfig, rng *rand.Rand) (*TaskRule, error) {
	r := &TaskRule{Format: TaskFormat, Method: method, Targets: targets, Scenes: scenes, Hidden: cfg.Hidden, Prior: prior}
	if targets < 1 || scenes < 1 || prior < 0 || math.IsInf(prior, 0) {
		return nil, fmt.Errorf("edgesched: task rule of %d targets, %d scenes, prior %g: want positive counts and a finite prior >= 0", targets, scenes, prior)
	}
	c, err := rl.NewChoice(targets, r.Features(), cfg, rng)
	if err != nil {
		return nil, err
	}
	r.choice = c
	return r, nil
}

// Features is the length of an option's features.
func (r *TaskRule) Features() int { return 7 + r.Targets + r.Scenes }

// Choice is the rule's scorer, for training it.
func (r *TaskRule) Choice() *rl.Choice { return r.choice }

// appendFeatures appends option o's features for task t: its estimate
// over the deadline, the jobs and the tasks uploading there, which target
// it is, the task's work, size and deadline, its device's backlog over the
// deadline, and its scene.
func (r *TaskRule) appendFeatures(dst []float64, t *Task, o Option) []float64 {
	d := t.Deadline
	dst = append(dst, min(o.Estimate/d, 20), float64(o.Jobs)/8, float64(o.Inbound)/8)
	for k := range r.Targets {
		dst = append(dst, b2f(o.Target == k))
	}
	dst = append(dst, t.Work, t.SizeMB/2, d, min(t.Backlog/d, 20))
	for g := range r.Scenes {
		dst = append(dst, b2f(t.Scene == g))
	}
	return dst
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Inputs are the options' features and priors (nil: none) for task t, in
// buffers the rule reuses.
func (r *TaskRule) Inputs(t *Task, opts []Option) (feats, prior []float64) {
	r.feats, r.prior = r.feats[:0], r.prior[:0]
	best := math.Inf(1)
	for _, o := range opts {
		r.feats = r.appendFeatures(r.feats, t, o)
		best = min(best, o.Estimate)
	}
	if r.Prior > 0 && best > 0 {
		for _, o := range opts {
			r.prior = append(r.prior, -(o.Estimate/best-1)/r.Prior)
		}
		prior = r.prior
	}
	return r.feats, prior
}

// Choose draws one of task t's options and returns its index and its
// log-probability. It allocates nothing once its buffers have grown.
func (r *TaskRule) Choose(t *Task, opts []Option) (int, float64) {
	feats, prior := r.Inputs(t, opts)
	return r.choice.Choose(feats, prior, len(opts), false)
}

func (r *TaskRule) arch() string {
	return fmt.Sprintf("edge-task-rule targets=%d scenes=%d features=%d hidden=%v", r.Targets, r.Scenes, r.Features(), r.Hidden)
}

// Write writes the rule file.
func (r *TaskRule) Write(w io.Writer) error {
	if err := modelfile.WriteHeader(w, r); err != nil {
		return err
	}
	return nn.Save(w, r.arch(), r.choice.Params())
}

// ReadTaskRule reads a rule file; its draws come from rng.
func ReadTaskRule(in io.Reader, rng *rand.Rand) (*TaskRule, error) {
	var h TaskRule
	br, err := modelfile.ReadHeader(in, &h, TaskFormat)
	if err != nil {
		return nil, err
	}
	if h.Format != TaskFormat {
		return nil, fmt.Errorf("edgesched: format %q, want %q", h.Format, TaskFormat)
	}
	cfg := rl.DefaultChoiceConfig()
	cfg.Hidden = h.Hidden
	r, err := NewTaskRule(h.Method, h.Targets, h.Scenes, h.Prior, cfg, rng)
	if err != nil {
		return nil, err
	}
	r.Provenance = h.Provenance
	if err := nn.Load(bufio.NewReader(br), r.arch(), r.choice.Params()); err != nil {
		return nil, err
	}
	return r, nil
}

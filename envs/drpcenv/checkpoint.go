package drpcenv

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// A checkpoint is a training run's whole state between two episodes: the
// trainer's (random source, learning curve, students' data set, feature
// range, recorded rates), the policy (students, forecaster) and the
// teacher's (networks, optimisers, replay buffer), so that a resumed run
// ends with the very policy the uninterrupted run would have, bit for bit
// (with an episode bound; a wall-time budget resumes with what is left of
// it, and how many episodes fit then depends on the machine).
//
// File: a JSON header line, the trainer's state (gob), the policy file,
// the teacher's state (rl.TD3.Save).
const checkpointFormat = "shoal-drpc-checkpoint"

type checkpointHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Settings are the run's settings that resuming must not change.
	Settings string `json:"settings"`
}

type trainerState struct {
	RNG              []byte
	Elapsed          time.Duration // wall time spent before this checkpoint
	Steps            int
	Curve            []Episode
	Low, High        []float64
	DataObs, DataAct [][][]float64
	Rates            [][]float64
	// Best is the best teacher on validation (nn.Save of its actor; empty:
	// none yet) and BestScore its reward there.
	Best                []byte
	BestScore, BestCost float64
	BestViolations      float64
	KeepBudget          float64 // trainer.keepBudget
	// Pending are the teacher's updates owed, Lambda the budget's
	// multiplier.
	Pending int
	Lambda  float64
}

// settings describes what a resumed run must share with the one that wrote
// the checkpoint: everything but the stopping rules (Episodes, Deadline).
// The arrival generator is a function and cannot be compared; the
// checkpoint file is per run, so it is the caller's to keep.
func settings(sc string, cfg Config) string {
	base := "none"
	if cfg.Base != nil {
		base = fmt.Sprintf("%+v", *cfg.Base)
	}
	if cfg.OverHPA != nil {
		base = fmt.Sprintf("over hpa %+v add-only %v", *cfg.OverHPA, cfg.AddOnly)
	}
	if cfg.Hold != nil {
		base += fmt.Sprintf(" hold %+v", *cfg.Hold)
	}
	if in := cfg.Init; in != nil {
		base += fmt.Sprintf(" fine-tuning %+v", in.Provenance)
	}
	return fmt.Sprintf("scenario %s seed %d episode %v period %v td3 %+v updates/step %d students %v imitation %d forecast %d %+v steps %+v reward %+v base %s validation %d every %d budget %g lr %g workers %d",
		sc, cfg.Seed, cfg.EpisodeLength, cfg.Period, cfg.TD3, cfg.UpdatesPerStep, cfg.StudentHidden, cfg.ImitationEpisodes,
		cfg.ForecastEpisodes, cfg.Forecast, cfg.Steps, cfg.Reward, base, cfg.ValidationEpisodes, cfg.ValidateEvery,
		cfg.Budget, cfg.BudgetLR, cfg.Workers)
}

// save writes the checkpoint (atomically: a crash leaves the previous one).
func (t *trainer) save(elapsed time.Duration) error {
	rng, err := t.src.MarshalBinary()
	if err != nil {
		return err
	}
	st := trainerState{RNG: rng, Elapsed: elapsed, Steps: t.steps, Curve: t.curve, Low: t.low, High: t.high,
		DataObs: t.dataObs, DataAct: t.dataAct, Rates: t.rates, BestScore: t.bestScore, BestCost: t.bestCost,
		BestViolations: t.bestViolations, KeepBudget: t.keepBudget,
		Pending: t.pending, Lambda: t.lambda}
	if t.best != nil {
		var b bytes.Buffer
		if err := nn.SaveModule(&b, t.best); err != nil {
			return err
		}
		st.Best = b.Bytes()
	}
	h := checkpointHeader{Format: checkpointFormat, Version: 2, Settings: settings(t.sc.Name, t.cfg)}
	err = modelfile.WriteFile(t.cfg.Checkpoint, func(w io.Writer) error {
		if err := modelfile.WriteHeader(w, h); err != nil {
			return err
		}
		if err := gob.NewEncoder(w).Encode(st); err != nil {
			return err
		}
		if err := t.pol.Write(w); err != nil {
			return err
		}
		return t.td3.Save(w)
	})
	if err != nil {
		return fmt.Errorf("drpcenv: checkpoint: %w", err)
	}
	return nil
}

// restore loads the checkpoint, if there is one, and returns the wall time
// the run had spent before it (ok false: no checkpoint, a fresh start).
func (t *trainer) restore() (elapsed time.Duration, ok bool, err error) {
	f, err := os.Open(t.cfg.Checkpoint)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	fail := func(err error) (time.Duration, bool, error) {
		return 0, false, fmt.Errorf("drpcenv: checkpoint %s: %w", t.cfg.Checkpoint, err)
	}
	var h checkpointHeader
	br, err := modelfile.ReadHeader(bufio.NewReader(f), &h, checkpointFormat)
	if err != nil {
		return fail(err)
	}
	if h.Format != checkpointFormat || h.Version != 2 {
		return fail(fmt.Errorf("format %q version %d, want %q version 2", h.Format, h.Version, checkpointFormat))
	}
	if want := settings(t.sc.Name, t.cfg); h.Settings != want {
		return fail(fmt.Errorf("written by a run with other settings (delete it, or resume with the same flags):\n  checkpoint: %s\n  this run:   %s", h.Settings, want))
	}
	var st trainerState
	if err := gob.NewDecoder(br).Decode(&st); err != nil {
		return fail(err)
	}
	pol, err := drpc.ReadPolicy(br)
	if err != nil {
		return fail(err)
	}
	if err := t.td3.Load(br); err != nil {
		return fail(err)
	}
	if err := t.src.UnmarshalBinary(st.RNG); err != nil {
		return fail(err)
	}
	t.pol, t.steps, t.curve, t.low, t.high = pol, st.Steps, st.Curve, st.Low, st.High
	t.dataObs, t.dataAct, t.rates, t.bestScore, t.bestCost = st.DataObs, st.DataAct, st.Rates, st.BestScore, st.BestCost
	t.bestViolations, t.keepBudget = st.BestViolations, st.KeepBudget
	t.pending, t.lambda = st.Pending, st.Lambda
	t.td3.Replay().SetPenalty(t.lambda)
	if len(st.Best) > 0 {
		t.best = shaped(t.td3.Actor(), "actor")
		if err := nn.LoadModule(bytes.NewReader(st.Best), t.best); err != nil {
			return fail(err)
		}
	}
	return st.Elapsed, true, nil
}

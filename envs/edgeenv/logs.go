// Package edgeenv is the edge scheduling paper's pipeline around the edge
// world: logging the world under the random engine policy (the "real"
// system's history), and learning from those logs only: the virtual
// agents (GAN-SMMSG against GMM, GAN and WGAN, Table 1), the virtual
// environment (MAIL-MMSG, a joint model, with learn/venv), MA-PPO trained
// in it with Eq. 8, behaviour cloning on the logs (Eq. 7), PPO in the real
// world (the upper bound), and the policies' evaluation in the real world.
package edgeenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/edge"
)

// Logging configures the history of the real system.
type Logging struct {
	Seed uint64
	// Days are the month days whose windows are logged.
	Days []float64
	// From is when in the day a window starts, and Window how long it runs.
	From, Window time.Duration
	// Engine is the logging engines' mix (edge.Mix); nil: the paper's
	// random engine alone.
	Engine []edge.Stretch
	// Rule is the offloading rule the weights act through ("": the
	// weights themselves, the paper's; edge.WeightedGreedy).
	Rule edge.Heuristic
}

// DefaultLogging logs one hour of each of the first seven days: a week of
// history.
func DefaultLogging() Logging {
	return Logging{Seed: 1, Days: []float64{0, 1, 2, 3, 4, 5, 6}, From: 12 * time.Hour, Window: time.Hour}
}

// Log runs the world under the logging engine for every window and writes
// the agents' transitions, after each window its devices' records, and,
// when tasks is not nil, the records of one task in TaskEvery, as JSON
// lines.
func Log(cfg edge.Config, l Logging, transitions, devices, tasks io.Writer) error {
	shape, err := edge.WikipediaShape()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(devices)
	var tw *edge.TaskWriter
	if tasks != nil {
		tw = edge.NewTaskWriter(tasks)
	}
	for i, day := range l.Days {
		start := time.Duration(day*24*float64(time.Hour)) + l.From
		w, err := edge.New(cfg, shape, l.Seed+uint64(i), start)
		if err != nil {
			return err
		}
		if err := w.SetHeuristic(l.Rule); err != nil {
			return err
		}
		if tw != nil {
			w.LogTasks(TaskEvery, tw.Write)
		}
		steps := int(l.Window / cfg.Step)
		var policy edge.Policy = edge.RandomPolicy{Rand: rand.New(rand.NewPCG(l.Seed+uint64(i), 0x6c6f67))}
		if l.Engine != nil {
			if policy, err = edge.NewMix(w, rand.New(rand.NewPCG(l.Seed+uint64(i), 0x6d6978)), l.Engine); err != nil {
				return err
			}
		}
		if err := edge.Log(transitions, w, steps, policy); err != nil {
			return err
		}
		for _, r := range w.DeviceRecords() {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

// ReadDevices reads device records, refusing unknown fields and scenes.
func ReadDevices(r io.Reader) ([]edge.DeviceRecord, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	dec.DisallowUnknownFields()
	var out []edge.DeviceRecord
	for n := 1; ; n++ {
		var d edge.DeviceRecord
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("devices: record %d: %w", n, err)
		}
		if d.Scene < 0 || d.Scene >= edge.Scenes {
			return nil, fmt.Errorf("devices: record %d: scene %d, want [0, %d)", n, d.Scene, edge.Scenes)
		}
		out = append(out, d)
	}
}

package edge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// TaskRecord is one task of a log: what the platform saw when it chose
// where the task runs (each allowed target's estimate and the jobs seen
// there), what it chose, and how the task went. An operator's platform
// has all of it: the work is the task's CPU accounting, the upload its
// input's transfer time.
type TaskRecord struct {
	Day      float64      `json:"day"` // month time of its arrival, days
	Scene    int          `json:"scene"`
	Device   int          `json:"device"`
	Work     float64      `json:"work_g"` // Gcycles
	SizeMB   float64      `json:"size_mb"`
	Deadline float64      `json:"deadline_s"`
	Backlog  float64      `json:"backlog_s"` // its device's local backlog
	Cands    []TaskOption `json:"cands"`     // the targets it was allowed
	Target   int          `json:"target"`
	Upload   float64      `json:"upload_s"` // 0 when it ran locally
	Took     float64      `json:"took_s"`
	Missed   bool         `json:"missed"`
}

// TaskOption is a target as a logged task's platform saw it (Candidate).
type TaskOption struct {
	Target   int     `json:"target"`
	Estimate float64 `json:"est_s"`
	Jobs     int     `json:"jobs"`
	Inbound  int     `json:"inbound"`
}

// Pick is the index of the chosen target among the record's candidates
// (-1 if it is not one of them).
func (r *TaskRecord) Pick() int {
	for i, c := range r.Cands {
		if c.Target == r.Target {
			return i
		}
	}
	return -1
}

// LogTasks makes the world hand every every-th task's record to fn when
// the task ends (every < 1: none). Recording changes nothing the world
// does: the same seed gives the same tasks and choices.
func (w *World) LogTasks(every int, fn func(*TaskRecord)) {
	w.logEvery, w.logTask = every, fn
	if every < 1 || fn == nil {
		w.logEvery, w.logTask = 0, nil
	}
}

// recordArrival starts task t's record, if it is one to log, with the
// targets in [lo, hi) as the platform sees them now.
func (w *World) recordArrival(t *task, lo, hi int) {
	t.rec = nil
	if w.logEvery == 0 || t.ps.Seq%uint64(w.logEvery) != 0 {
		return
	}
	gr := &w.cfg.Groups[t.group]
	r := &TaskRecord{Day: float64(w.MonthTime()) / float64(24*time.Hour), Scene: t.group, Device: t.device, Work: t.work,
		SizeMB: t.sizeMB, Deadline: gr.Deadline.Seconds(), Backlog: max(w.devBusy[t.group][t.device]-w.k.Now(), 0).Seconds()}
	for target := lo; target < hi; target++ {
		jobs, in := 0, 0
		if target != targetLocal {
			jobs, in = w.jobs(target, t.group), w.inbound(target, t.group)
		}
		r.Cands = append(r.Cands, TaskOption{Target: target, Estimate: w.estimate(t, target).Seconds(), Jobs: jobs, Inbound: in})
	}
	t.rec = r
}

// recordEnd completes task t's record, which took d, and hands it on.
func (w *World) recordEnd(t *task, d time.Duration) {
	r := t.rec
	t.rec = nil
	r.Target, r.Took, r.Missed = t.target, d.Seconds(), d > w.cfg.Groups[t.group].Deadline
	w.logTask(r)
}

// TaskWriter writes task records as JSON lines.
type TaskWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
	err error
}

// NewTaskWriter writes to out; Flush when done.
func NewTaskWriter(out io.Writer) *TaskWriter {
	bw := bufio.NewWriter(out)
	return &TaskWriter{bw: bw, enc: json.NewEncoder(bw)}
}

// Write writes r, keeping the first error for Flush.
func (tw *TaskWriter) Write(r *TaskRecord) {
	if tw.err == nil {
		tw.err = tw.enc.Encode(r)
	}
}

// Flush writes what is buffered and reports the first error.
func (tw *TaskWriter) Flush() error {
	if tw.err != nil {
		return tw.err
	}
	return tw.bw.Flush()
}

// ReadTasks reads task records, refusing unknown fields, scenes and
// targets, and records whose target is not among their candidates.
func ReadTasks(r io.Reader) ([]TaskRecord, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	dec.DisallowUnknownFields()
	var out []TaskRecord
	for n := 1; ; n++ {
		var t TaskRecord
		err := dec.Decode(&t)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("edge tasks: record %d: %w", n, err)
		}
		if t.Scene < 0 || t.Scene >= Scenes || t.Target < 0 || t.Target >= Targets || t.Pick() < 0 || !(t.Deadline > 0) {
			return nil, fmt.Errorf("edge tasks: record %d: scene %d, target %d of candidates %v, deadline %g s: want a scene in [0, %d), a target among the candidates and a positive deadline",
				n, t.Scene, t.Target, t.Cands, t.Deadline, Scenes)
		}
		out = append(out, t)
	}
}

package firmenv

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/firm"
	"github.com/shoal-project/shoal/scenario"
)

// TestTrainSmoke: a short training run on TrainTicket fits a classifier
// that finds culprits, runs DDPG and writes a policy that reads back and
// drives a controller; the same seed gives the same policy bytes.
func TestTrainSmoke(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Seed, cfg.LabelEpisodes, cfg.Episodes, cfg.EpisodeLength = 3, 1, 2, 2*time.Minute
	cfg.DDPG.LearningStarts, cfg.DDPG.BatchSize = 8, 8
	var files [2][]byte
	for k := range files {
		tr, err := Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pr := tr.Policy.Provenance
		if pr.Samples == 0 || pr.Accuracy < 0.6 || pr.Episodes != 2 || pr.EnvSteps == 0 || pr.Updates == 0 {
			t.Fatalf("provenance %+v: want samples, accuracy >= 0.6, 2 episodes, culprit steps and updates", pr)
		}
		var buf bytes.Buffer
		if err := tr.Policy.Write(&buf); err != nil {
			t.Fatal(err)
		}
		files[k] = buf.Bytes()
		if _, err := firm.ReadPolicy(bytes.NewReader(files[k])); err != nil {
			t.Fatal(err)
		}
		t.Logf("provenance %+v classifier %+v", pr, tr.Policy.Classifier)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("the same seed gave different policies")
	}
}

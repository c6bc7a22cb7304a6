package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// TestKubeJobObjects: one pod per shard, each told its completion index,
// with the sweep file and its scenario files beside it; the pods' store
// must be PostgreSQL.
func TestKubeJobObjects(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile("../scenario/embedded/lb-drift.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sc", "mine.yaml"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(path, []byte("name: k\nscenarios: [lb-moderate-cpu, sc/mine.yaml]\npolicies: [sed]\nhorizon: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	k := KubeJob{ID: "My_Sweep", Namespace: "ns", Image: "shoal:dev", Shards: 5, Parallelism: 2, DB: "postgres://u@db/shoal"}
	cm, job, err := k.Objects(spec)
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "shoal-sweep-my-sweep" || cm.Name != job.Name {
		t.Errorf("names %s and %s", job.Name, cm.Name)
	}
	if *job.Spec.CompletionMode != batchv1.IndexedCompletion || *job.Spec.Completions != 5 || *job.Spec.Parallelism != 2 {
		t.Errorf("job spec %+v", job.Spec)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if got := strings.Join(c.Args, " "); got != "sweep /etc/shoal/sweep/sweep.yaml --id My_Sweep --quiet --shard $(JOB_COMPLETION_INDEX)/5" {
		t.Errorf("args %q", got)
	}
	if c.Env[0].Name != "SHOAL_DB" || c.Env[0].Value != k.DB {
		t.Errorf("env %+v", c.Env)
	}
	if cm.Data["mine.yaml"] != string(raw) {
		t.Errorf("the scenario file is not beside the sweep")
	}
	// The pods read the sweep the ConfigMap holds as the local one.
	inPod, err := Decode([]byte(cm.Data["sweep.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(inPod.Scenarios, ",") != "lb-moderate-cpu,./mine.yaml" || inPod.Horizon != spec.Horizon {
		t.Errorf("the pods' sweep: %+v", inPod)
	}

	k.DB = "/tmp/local.db"
	if _, _, err := k.Objects(spec); err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("a SQLite store for pods: %v", err)
	}
	k.DB, k.DBSecret = "", "db"
	_, job, err = k.Objects(spec)
	if err != nil || job.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Name != "db" {
		t.Errorf("with a Secret: %v", err)
	}
}

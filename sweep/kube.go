package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/shoal-project/shoal/store"
	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// KubeJob is a sweep submitted to Kubernetes as an Indexed Job: pod i runs
// `shoal sweep FILE --shard i/Shards` (its completion index) and writes to
// the shared PostgreSQL, so the pods together run the sweep once.
type KubeJob struct {
	ID          string // the sweep's id
	Namespace   string
	Image       string // an image whose entrypoint is shoal
	Shards      int    // completions: one pod per shard
	Parallelism int    // pods at once (default Shards)
	// DB is the PostgreSQL URL the pods write to, or DBSecret names a
	// Secret whose key "url" holds it (then DB is not put in the Job).
	DB, DBSecret string
	// Retries is each shard's backoffLimitPerIndex (default 2): a retried
	// pod skips the runs its predecessor stored.
	Retries int32
}

// specDir is where the pods find the sweep file and its scenario files.
const specDir = "/etc/shoal/sweep"

// Objects returns the ConfigMap holding the sweep file (its scenario files
// beside it, by base name) and the Job.
func (k KubeJob) Objects(spec *Spec) (*corev1.ConfigMap, *batchv1.Job, error) {
	if k.Shards < 1 || k.Image == "" || (k.DB == "") == (k.DBSecret == "") {
		return nil, nil, fmt.Errorf("sweep on kubernetes: want shards >= 1, an image, and one of a database URL or its Secret")
	}
	if k.DB != "" && !store.IsPostgres(k.DB) {
		return nil, nil, fmt.Errorf("sweep on kubernetes: the pods share the store, so it must be PostgreSQL (a postgres:// URL), not %q", k.DB)
	}
	data, err := spec.files()
	if err != nil {
		return nil, nil, err
	}
	name := JobName(k.ID)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: labels(k.ID)},
		Data:       data,
	}
	return cm, k.job(name), nil
}

func (k KubeJob) job(name string) *batchv1.Job {
	par := k.Parallelism
	if par <= 0 || par > k.Shards {
		par = k.Shards
	}
	retries := k.Retries
	if retries == 0 {
		retries = 2
	}
	db := corev1.EnvVar{Name: "SHOAL_DB", Value: k.DB}
	if k.DBSecret != "" {
		db = corev1.EnvVar{Name: "SHOAL_DB", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: k.DBSecret}, Key: "url"}}}
	}
	pod := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:  "sweep",
			Image: k.Image,
			// Kubernetes puts the completion index in JOB_COMPLETION_INDEX
			// and expands $(VAR) in args.
			Args: []string{"sweep", specDir + "/sweep.yaml", "--id", k.ID, "--quiet",
				"--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", k.Shards)},
			Env:          []corev1.EnvVar{db},
			VolumeMounts: []corev1.VolumeMount{{Name: "sweep", MountPath: specDir, ReadOnly: true}},
		}},
		Volumes: []corev1.Volume{{Name: "sweep", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}},
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: labels(k.ID)},
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr.To(batchv1.IndexedCompletion),
			Completions:          ptr.To(int32(k.Shards)),
			Parallelism:          ptr.To(int32(par)),
			BackoffLimitPerIndex: ptr.To(retries),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(k.ID)},
				Spec:       pod,
			},
		},
	}
}

func labels(id string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "shoal-sweep", "shoal.dev/sweep": labelValue(id)}
}

var (
	notDNS   = regexp.MustCompile(`[^a-z0-9-]+`)
	notLabel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// JobName is the Job (and ConfigMap) of a sweep id: a DNS label.
func JobName(id string) string {
	n := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(id), "-"), "-")
	return "shoal-sweep-" + strings.TrimRight(n[:min(len(n), 50)], "-")
}

func labelValue(id string) string {
	v := notLabel.ReplaceAllString(id, "-")
	return strings.Trim(v[:min(len(v), 63)], "-._")
}

// files are the ConfigMap's data: sweep.yaml, with its scenario files
// beside it under their base names.
func (s *Spec) files() (map[string]string, error) {
	out := *s
	out.Scenarios = nil
	data := map[string]string{}
	for _, name := range s.Scenarios {
		if !strings.ContainsAny(name, "/.") {
			out.Scenarios = append(out.Scenarios, name) // embedded
			continue
		}
		path := s.scenarioPath(name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("sweep: scenario %s: %w", name, err)
		}
		base := filepath.Base(path)
		if _, dup := data[base]; dup || base == "sweep.yaml" {
			return nil, fmt.Errorf("sweep: two scenario files named %s (the pods get them side by side)", base)
		}
		data[base] = string(b)
		out.Scenarios = append(out.Scenarios, "./"+base)
	}
	b, err := yaml.Marshal(&out)
	if err != nil {
		return nil, err
	}
	data["sweep.yaml"] = string(b)
	return data, nil
}

// DescribeJob is a line on a sweep's Job: its pods and indexes.
func DescribeJob(j *batchv1.Job) string {
	done := "no index completed"
	if j.Status.CompletedIndexes != "" {
		done = "completed indexes " + j.Status.CompletedIndexes
	}
	failed := ""
	if j.Status.FailedIndexes != nil && *j.Status.FailedIndexes != "" {
		failed = ", failed indexes " + *j.Status.FailedIndexes
	}
	state := "running"
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			state = strings.ToLower(string(c.Type))
		}
	}
	return fmt.Sprintf("job %s/%s %s: %d of %d pods succeeded, %d active, %d failed; %s%s", j.Namespace, j.Name, state,
		j.Status.Succeeded, ptr.Deref(j.Spec.Completions, 0), j.Status.Active, j.Status.Failed, done, failed)
}

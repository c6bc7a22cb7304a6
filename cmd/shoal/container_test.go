package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/containertest"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom/promtest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestImage: scripts/image.sh's archive loads; the image runs /shoal as
// user 65532 from scratch with the build machine's CA certificates, its
// labels carry the version and revision the binary reports, and it runs
// with a read-only root filesystem and no capabilities.
func TestImage(t *testing.T) {
	archive := containertest.Image(t)
	ctx := context.Background()
	if out, err := containertest.Podman(ctx, "load", "-i", archive).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("Loaded image")) {
		t.Fatalf("podman load %s: %v\n%s", archive, err, out)
	}
	raw, err := containertest.Podman(ctx, "image", "inspect", containertest.Name).Output()
	if err != nil {
		t.Fatal(err)
	}
	var img []struct {
		Config struct {
			User       string
			Entrypoint []string
			Labels     map[string]string
		}
	}
	if err := json.Unmarshal(raw, &img); err != nil || len(img) != 1 {
		t.Fatalf("podman image inspect: %v\n%s", err, raw)
	}
	cfg := img[0].Config
	if cfg.User != "65532:65532" || strings.Join(cfg.Entrypoint, " ") != "/shoal" {
		t.Errorf("user %q, entrypoint %q: want 65532:65532 and /shoal", cfg.User, cfg.Entrypoint)
	}
	version, err := containertest.Podman(ctx, append(append([]string{"run", "--rm"}, securityOpts(operatorContainer(t))...), containertest.Name, "version")...).CombinedOutput()
	if err != nil {
		t.Fatalf("shoal version, read-only and without capabilities: %v\n%s", err, version)
	}
	m := regexp.MustCompile(`^shoal (\S+) revision ([0-9a-f]{40}|unknown)`).FindStringSubmatch(string(version))
	if m == nil || cfg.Labels["org.opencontainers.image.version"] != m[1] || cfg.Labels["org.opencontainers.image.revision"] != m[2] {
		t.Errorf("labels %v, but the binary says %q", cfg.Labels, version)
	}
	id, err := containertest.Podman(ctx, "create", containertest.Name).Output()
	if err != nil {
		t.Fatal(err)
	}
	defer containertest.Podman(ctx, "rm", strings.TrimSpace(string(id))).Run()
	dir := t.TempDir()
	for _, f := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/passwd"} {
		if out, err := containertest.Podman(ctx, "cp", strings.TrimSpace(string(id))+":"+f, filepath.Join(dir, filepath.Base(f))).CombinedOutput(); err != nil {
			t.Fatalf("podman cp %s: %v\n%s", f, err, out)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "ca-certificates.crt"))
	want, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if len(got) == 0 || !bytes.Equal(got, want) {
		t.Errorf("the image's CA certificates (%d bytes) are not this machine's (%d)", len(got), len(want))
	}
	if passwd, _ := os.ReadFile(filepath.Join(dir, "passwd")); !bytes.Contains(passwd, []byte("nonroot:x:65532:65532:")) {
		t.Errorf("/etc/passwd has no user 65532:\n%s", passwd)
	}
}

// operatorContainer is deploy/operator.yaml's operator container.
func operatorContainer(t *testing.T) corev1.Container {
	t.Helper()
	for _, o := range readManifests(t, filepath.Join(repoRoot, "deploy", "operator.yaml")) {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d.Spec.Template.Spec.Containers[0]
		}
	}
	t.Fatal("deploy/operator.yaml has no Deployment")
	return corev1.Container{}
}

// securityOpts are the podman run options of a container's security
// context as the manifests declare it, which the tests insist on: a
// read-only root filesystem, every capability dropped, no privilege
// escalation.
func securityOpts(c corev1.Container) []string {
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
		panic("the operator's container must declare a read-only root, no privilege escalation and every capability dropped")
	}
	return []string{"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"}
}

// TestOperatorContainer: 'shoal operator' from the image, with
// deploy/operator.yaml's arguments and security context and a mounted
// kubeconfig of a user holding only deploy/rbac's role, scales a
// Deployment from a real Prometheus on the test control plane, as the
// process does (TestOperatorWithItsOwnRole), and stops cleanly.
func TestOperatorContainer(t *testing.T) {
	containertest.Image(t)
	c := kubetest.Start(t, 1)
	c.InstallCRDDir(t, filepath.Join(repoRoot, "deploy", "crds"))
	c.Deploy(t, "default", "front", 1)
	srv := promtest.Start(t, c.ServeMetrics(t, kubetest.Busy(0.9)))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	raw, err := os.ReadFile(operatorUser(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, raw, 0o644); err != nil { // readable by the container's user
		t.Fatal(err)
	}
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	as := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "default"},
		Spec: v1alpha1.AutoscalerSpec{Target: &v1alpha1.Target{Name: "front", Container: "app"}, MinReplicas: 1, MaxReplicas: 4,
			TargetCPUUtilization: 50, Period: metav1.Duration{Duration: 2 * time.Second}}}
	if err := k.Create(ctx, as); err != nil {
		t.Fatal(err)
	}
	ct := operatorContainer(t)
	args := overrideFlags(ct.Args, map[string]string{"prometheus": srv.URL, "metrics-address": promtest.FreeAddr(t), "health-address": promtest.FreeAddr(t)})
	args = append(args, "--kubeconfig", "/etc/shoal/kubeconfig", "--leader-election-namespace", "default")
	op := containertest.Run(t, append(securityOpts(ct), "-v", kubeconfig+":/etc/shoal/kubeconfig:ro"), args...)
	c.WaitReady(t, "default", "front", 4, 2*time.Minute)
	eventsAccepted(t, c)
	if code := op.Stop(30 * time.Second); code != 0 {
		t.Errorf("the operator's container exited %d on SIGTERM, want 0", code)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "front", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 4, nil
	})
	if err != nil {
		t.Errorf("front after the operator stopped: %v", err)
	}
}

// overrideFlags returns args with each --NAME=VALUE or --NAME VALUE of set
// given set's value, and the flags args lacks appended.
func overrideFlags(args []string, set map[string]string) []string {
	out := make([]string, 0, len(args)+2*len(set))
	done := map[string]bool{}
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		v, ok := set[name]
		if !ok || !strings.HasPrefix(args[i], "--") {
			out = append(out, args[i])
			continue
		}
		if !hasValue {
			i++ // the value was the next argument
		}
		out = append(out, "--"+name+"="+v)
		done[name] = true
	}
	for name, v := range set {
		if !done[name] {
			out = append(out, "--"+name+"="+v)
		}
	}
	return out
}

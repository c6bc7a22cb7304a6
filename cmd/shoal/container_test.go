package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
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
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

// TestHelmChart: the chart lints; its rendering with namespace.create is
// deploy/operator.yaml (go test -update rewrites it); its ServiceMonitor
// and dashboard render when asked for. 'helm install' puts it on the test
// control plane, and the operator's container from the image, run as the
// chart's Deployment declares it (arguments, security context) with its
// service account's token, scales a Deployment by an Autoscaler from a
// real Prometheus, as the process does (TestOperatorWithItsOwnRole); the
// API server takes its events, and it stops cleanly on SIGTERM.
func TestHelmChart(t *testing.T) {
	chart := filepath.Join(repoRoot, "deploy", "helm", "shoal")
	if out := helm(t, "lint", "--strict", chart); !strings.Contains(out, "0 chart(s) failed") {
		t.Errorf("helm lint:\n%s", out)
	}
	rendered := helm(t, "template", "shoal", chart, "--namespace", "shoal-system", "--set", "namespace.create=true")
	manifest := filepath.Join(repoRoot, "deploy", "operator.yaml")
	if *update {
		if err := os.WriteFile(manifest, []byte(operatorYAMLHeader+rendered), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if raw, _ := os.ReadFile(manifest); string(raw) != operatorYAMLHeader+rendered {
		t.Errorf("deploy/operator.yaml is not the chart's rendering (go test ./cmd/shoal -run TestHelmChart -update):\n%s", rendered)
	}
	extras := helm(t, "template", "shoal", chart, "--set", "serviceMonitor.enabled=true", "--set", "grafanaDashboard.enabled=true", "--show-only", "templates/servicemonitor.yaml", "--show-only", "templates/dashboard.yaml")
	dashboard, _ := os.ReadFile(filepath.Join(chart, "files", "shoal-operator.json"))
	if !strings.Contains(extras, "kind: ServiceMonitor") || !strings.Contains(extras, "grafana_dashboard: \"1\"") || !strings.Contains(extras, strings.SplitN(string(dashboard), "\n", 2)[0]) {
		t.Errorf("the ServiceMonitor and the dashboard's ConfigMap:\n%s", extras)
	}

	containertest.Image(t)
	c := kubetest.Start(t, 1)
	c.Deploy(t, "default", "front", 1)
	srv := promtest.Start(t, c.ServeMetrics(t, kubetest.Busy(0.9)))
	helm(t, "install", "shoal", chart, "--kubeconfig", c.Kubeconfig, "--namespace", "shoal-system", "--create-namespace",
		"--set", "prometheus.url="+srv.URL, "--set", "watchNamespaces={default}")
	ctx := context.Background()
	dep, err := c.Client.AppsV1().Deployments("shoal-system").Get(ctx, "shoal-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	as := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "default"},
		Spec: v1alpha1.AutoscalerSpec{Target: &v1alpha1.Target{Name: "front", Container: "app"}, MinReplicas: 1, MaxReplicas: 4,
			TargetCPUUtilization: 50, Period: metav1.Duration{Duration: 2 * time.Second}}}
	if err := k.Create(ctx, as); err != nil { // the chart installed the CRDs
		t.Fatal(err)
	}
	ct := dep.Spec.Template.Spec.Containers[0]
	kubeconfig := serviceAccountKubeconfig(t, c, "shoal-system", dep.Spec.Template.Spec.ServiceAccountName)
	// Outside a pod: the Lease's namespace is told, and the servers listen
	// on loopback only.
	args := overrideFlags(ct.Args, map[string]string{"metrics-address": promtest.FreeAddr(t), "health-address": promtest.FreeAddr(t)})
	args = append(args, "--kubeconfig", "/etc/shoal/kubeconfig", "--leader-election-namespace", "shoal-system")
	op := containertest.Run(t, append(securityOpts(ct), "-v", kubeconfig+":/etc/shoal/kubeconfig:ro"), args...)
	c.WaitReady(t, "default", "front", 4, 2*time.Minute)
	eventsAccepted(t, c, "shoal-system")
	if code := op.Stop(30 * time.Second); code != 0 {
		t.Errorf("the operator's container exited %d on SIGTERM, want 0", code)
	}
}

// operatorYAMLHeader opens deploy/operator.yaml, the chart's rendering.
const operatorYAMLHeader = `# Shoal's operator in a cluster, for kubectl: the Helm chart deploy/helm/shoal
# rendered with its default values and namespace.create=true (generated:
# go test ./cmd/shoal -run TestHelmChart -update). Apply the CRDs first:
#
#   kubectl apply -f deploy/helm/shoal/crds/ -f deploy/operator.yaml
#
# The image is scripts/image.sh's, pushed to your registry: set it here (or
# kubectl -n shoal-system set image deployment/shoal-operator
# operator=REGISTRY/shoal:TAG). --prometheus is kube-prometheus-stack's
# service; point it at yours. With Helm: helm install shoal deploy/helm/shoal
# --namespace shoal-system --create-namespace --set image.repository=...
`

// helm runs the helm binary scripts/kube-bins.sh builds, with its own
// configuration and cache, and returns its output; it fails the test on
// an error.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(kubetest.Bin(), "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm is missing from %s: run scripts/kube-bins.sh (scripts/test.sh does)", kubetest.Bin())
	}
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// serviceAccountKubeconfig writes a kubeconfig, readable by the
// container's user, with a token of the service account.
func serviceAccountKubeconfig(t *testing.T, c *kubetest.Cluster, namespace, name string) string {
	t.Helper()
	tok, err := c.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of %s/%s: %v", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
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

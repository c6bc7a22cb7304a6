package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/containertest"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/loadgen"
	"github.com/shoal-project/shoal/prom/promtest"
	"github.com/shoal-project/shoal/store"
	"github.com/shoal-project/shoal/store/pgtest"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestImage: scripts/image.sh's archive loads; the image runs /shoal as
// user 65532 from scratch with the build machine's CA certificates, its
// labels carry the version and revision the binary reports, it runs with a
// read-only root filesystem and no capabilities, and podman pushes it.
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
	version, err := containertest.Podman(ctx, append(append([]string{"run", "--rm"}, securityOpts(t, operatorContainer(t))...), containertest.Name, "version")...).CombinedOutput()
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
	// The README's push, to an OCI layout here rather than a registry.
	layout := filepath.Join(dir, "layout")
	if out, err := containertest.Podman(ctx, "push", "--quiet", containertest.Name, "oci:"+layout+":shoal").CombinedOutput(); err != nil {
		t.Fatalf("podman push: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(layout, "index.json")); err != nil {
		t.Errorf("the pushed image: %v", err)
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
func securityOpts(t *testing.T, c corev1.Container) []string {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
		t.Fatalf("the container %s must declare a read-only root, no privilege escalation and every capability dropped: %+v", c.Name, sc)
	}
	return containerSecurity
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
	if out := helm(t, "lint", "--strict", chart, "--set", "image.repository=REGISTRY/shoal"); !strings.Contains(out, "0 chart(s) failed") {
		t.Errorf("helm lint:\n%s", out)
	}
	// Shoal publishes no image: without one the chart says what to set.
	if out, err := helmErr(t, "template", "shoal", chart); err == nil || !strings.Contains(out, "image.repository is required") || !strings.Contains(out, "scripts/image.sh") {
		t.Errorf("helm template without image.repository: %v, want a refusal that says what to set:\n%s", err, out)
	}
	rendered := helm(t, "template", "shoal", chart, "--namespace", "shoal-system", "--set", "namespace.create=true",
		"--set", "image.repository=REGISTRY/shoal", "--set", "image.tag=TAG")
	manifest := filepath.Join(repoRoot, "deploy", "operator.yaml")
	if *update {
		if err := os.WriteFile(manifest, []byte(operatorYAMLHeader+rendered), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if raw, _ := os.ReadFile(manifest); string(raw) != operatorYAMLHeader+rendered {
		t.Errorf("deploy/operator.yaml is not the chart's rendering (go test ./cmd/shoal -run TestHelmChart -update):\n%s", rendered)
	}
	extras := helm(t, "template", "shoal", chart, "--set", "image.repository=REGISTRY/shoal", "--set", "serviceMonitor.enabled=true", "--set", "grafanaDashboard.enabled=true", "--show-only", "templates/servicemonitor.yaml", "--show-only", "templates/dashboard.yaml")
	dashboard, _ := os.ReadFile(filepath.Join(chart, "files", "shoal-operator.json"))
	if !strings.Contains(extras, "kind: ServiceMonitor") || !strings.Contains(extras, "grafana_dashboard: \"1\"") || !strings.Contains(extras, strings.SplitN(string(dashboard), "\n", 2)[0]) {
		t.Errorf("the ServiceMonitor and the dashboard's ConfigMap:\n%s", extras)
	}

	containertest.Image(t)
	c := kubetest.Start(t, 1)
	c.Deploy(t, "default", "front", 1)
	srv := promtest.Start(t, c.ServeMetrics(t, kubetest.Busy(0.9)))
	helm(t, "install", "shoal", chart, "--kubeconfig", c.Kubeconfig, "--namespace", "shoal-system", "--create-namespace",
		"--set", "image.repository="+strings.Split(containertest.Name, ":")[0], "--set", "image.tag="+strings.Split(containertest.Name, ":")[1],
		"--set", "prometheus.url="+srv.URL, "--set", "watchNamespaces={default}")
	ctx := context.Background()
	dep, err := c.Client.AppsV1().Deployments("shoal-system").Get(ctx, "shoal-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	scaleFront(t, c) // the chart installed the CRDs
	ct := dep.Spec.Template.Spec.Containers[0]
	kubeconfig := serviceAccountKubeconfig(t, c, "shoal-system", dep.Spec.Template.Spec.ServiceAccountName)
	// Outside a pod: the Lease's namespace is told, and the servers listen
	// on loopback only.
	args := overrideFlags(ct.Args, map[string]string{"metrics-address": promtest.FreeAddr(t), "health-address": promtest.FreeAddr(t)})
	args = append(args, "--kubeconfig", "/etc/shoal/kubeconfig", "--leader-election-namespace", "shoal-system")
	op := containertest.Run(t, append(securityOpts(t, ct), "-v", kubeconfig+":/etc/shoal/kubeconfig:ro"), args...)
	c.WaitReady(t, "default", "front", 4, 2*time.Minute)
	eventsAccepted(t, c, "shoal-system")
	if code := op.Stop(30 * time.Second); code != 0 {
		t.Errorf("the operator's container exited %d on SIGTERM, want 0", code)
	}
	helmUpgradeUninstall(t, c, chart)
}

// helmUpgradeUninstall runs the Kubernetes guide's upgrade and uninstall:
// an upgrade keeps the release's values and changes what it is told; an
// uninstall removes the operator and keeps the CRDs (and so every
// Autoscaler), as Helm does with a chart's crds/.
func helmUpgradeUninstall(t *testing.T, c *kubetest.Cluster, chart string) {
	ctx := context.Background()
	helm(t, "upgrade", "shoal", chart, "--kubeconfig", c.Kubeconfig, "--namespace", "shoal-system", "--reuse-values", "--set", "replicaCount=1")
	dep, err := c.Client.AppsV1().Deployments("shoal-system").Get(ctx, "shoal-operator", metav1.GetOptions{})
	if err != nil || *dep.Spec.Replicas != 1 || !strings.HasPrefix(dep.Spec.Template.Spec.Containers[0].Image, strings.Split(containertest.Name, ":")[0]+":") {
		t.Fatalf("after helm upgrade --reuse-values --set replicaCount=1: %v, want 1 replica of the same image: %+v", err, dep)
	}
	helm(t, "uninstall", "shoal", "--kubeconfig", c.Kubeconfig, "--namespace", "shoal-system", "--wait")
	if _, err := c.Client.AppsV1().Deployments("shoal-system").Get(ctx, "shoal-operator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall the operator's Deployment: %v, want not found", err)
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Get(ctx, "shoal-operator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall the operator's ClusterRole: %v, want not found", err)
	}
	if out := helm(t, "list", "--kubeconfig", c.Kubeconfig, "--namespace", "shoal-system", "--short"); strings.TrimSpace(out) != "" {
		t.Errorf("helm list after uninstall: %q", out)
	}
	if _, err := c.Client.Discovery().ServerResourcesForGroupVersion("shoal.io/v1alpha1"); err != nil {
		t.Errorf("after helm uninstall the CRDs: %v, want them kept", err)
	}
}

// operatorYAMLHeader opens deploy/operator.yaml, the chart's rendering.
const operatorYAMLHeader = `# Shoal's operator in a cluster, for kubectl: the Helm chart deploy/helm/shoal
# rendered with its default values, namespace.create=true and the image
# REGISTRY/shoal:TAG (generated: go test ./cmd/shoal -run TestHelmChart
# -update). Apply the CRDs first:
#
#   kubectl apply -f deploy/helm/shoal/crds/ -f deploy/operator.yaml
#
# Shoal publishes no image: build it with scripts/image.sh, push it to your
# registry and replace REGISTRY/shoal:TAG below with it (or kubectl -n
# shoal-system set image deployment/shoal-operator
# operator=REGISTRY/shoal:TAG). --prometheus is kube-prometheus-stack's
# service; point it at yours. With Helm: helm install shoal deploy/helm/shoal
# --namespace shoal-system --create-namespace --set image.repository=...
`

// helm runs the helm binary scripts/kube-bins.sh builds, with its own
// configuration and cache, and returns its output; it fails the test on
// an error.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmErr(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmErr runs helm and returns its output (standard error after standard
// output) and its error.
func helmErr(t *testing.T, args ...string) (string, error) {
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
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
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

// containerSecurity are the podman run options of the security context
// every Shoal container declares: a read-only root filesystem, every
// capability dropped, no privilege escalation.
var containerSecurity = []string{"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"}

// TestProxyContainer: 'shoal proxy' from the image, its file mounted,
// in front of two 'shoal backend' containers. 'shoal load' sends 4 s of
// traffic through it; half way, the mounted file gains the second backend,
// the proxy reloads it, and every request is answered, the second backend
// getting some.
func TestProxyContainer(t *testing.T) {
	containertest.Image(t)
	var backends []string
	for i := range 2 {
		addr := promtest.FreeAddr(t)
		containertest.Run(t, containerSecurity, "backend", "--listen", addr, "--cpu", "exp:0.001", "--seed", strconv.Itoa(i+1))
		backends = append(backends, "http://"+addr)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	listen, admin := promtest.FreeAddr(t), promtest.FreeAddr(t)
	head := fmt.Sprintf("listen: %s\nadmin: %s\npolicy: lsq\n", listen, admin)
	write := func(text string) { // whole, by rename, as a ConfigMap's volume changes
		tmp := filepath.Join(dir, ".proxy.yaml")
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "proxy.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	write(head + fmt.Sprintf("backends: [{url: %s}]\n", backends[0]))
	proxy := containertest.Run(t, append(containerSecurity, "-v", dir+":/etc/shoal:ro"), "proxy", "-c", "/etc/shoal/proxy.yaml", "--watch", "100ms")
	logs := stringerFunc(proxy.Logs)
	waitUntil(t, "the proxy and its backends ready", logs, func() bool {
		for _, u := range []string{"http://" + admin + "/readyz", backends[0] + "/", backends[1] + "/"} {
			resp, err := http.Get(u)
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
		}
		return true
	})
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := runCLI(t, "load", "http://"+listen+"/", "--arrivals", "constant", "--rate", "200", "--duration", "4s", "--json")
		done <- result{out, err}
	}()
	time.Sleep(1500 * time.Millisecond)
	write(head + fmt.Sprintf("backends: [{url: %s}, {url: %s}]\n", backends[0], backends[1]))
	waitUntil(t, "the mounted file reloaded", logs, func() bool { s := proxyStatus(admin); return s.Generation == 1 && len(s.Backends) == 2 })
	r := <-done
	if r.err != nil {
		t.Fatalf("shoal load: %v\n%s", r.err, r.out)
	}
	var sum loadgen.Summary
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil {
		t.Fatalf("shoal load --json: %v\n%s", err, r.out)
	}
	if sum.Scheduled < 700 || sum.Completed != sum.Scheduled || len(sum.Failed) != 0 || sum.Dropped != 0 {
		t.Errorf("through the reload: %+v, want every request answered", sum)
	}
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `shoal_proxy_requests_total{backend="`+backends[1]+`",code="2xx"}`) {
		t.Errorf("the backend the reload added got no request:\n%s", metrics)
	}
	if code := proxy.Stop(30 * time.Second); code != 0 {
		t.Errorf("the proxy's container exited %d on SIGTERM, want 0", code)
	}
}

// stringerFunc is a function as a fmt.Stringer.
type stringerFunc func() string

func (f stringerFunc) String() string { return f() }

// TestSweepContainers: a sweep's Indexed Job, as 'shoal sweep --on
// kubernetes' creates it on the test control plane, run pod by pod as
// containers of the image: each index's container, with the Job's
// arguments (the index expanded as Kubernetes does), its environment and
// its ConfigMap mounted, records its shard into one PostgreSQL. The union
// is the sweep run in one process, run for run and bit for bit.
func TestSweepContainers(t *testing.T) {
	containertest.Image(t)
	c := kubetest.Start(t, 0)
	spec := writeFile(t, "tiny.yaml", tinySweep)
	db := pgtest.Start(t)
	const shards = 3
	if out, err := runCLI(t, "sweep", spec, "--on", "kubernetes", "--kubeconfig", c.Kubeconfig, "--image", containertest.Name,
		"--shards", strconv.Itoa(shards), "--db", db); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ctx := context.Background()
	job, err := c.Client.BatchV1().Jobs("default").Get(ctx, "shoal-sweep-tiny", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := job.Spec.Template.Spec
	cm, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, pod.Volumes[0].ConfigMap.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ct := pod.Containers[0]
	if ct.Image != containertest.Name {
		t.Fatalf("the Job's image %q", ct.Image)
	}
	opts := append([]string{}, containerSecurity...)
	for _, e := range ct.Env {
		opts = append(opts, "-e", e.Name+"="+e.Value)
	}
	opts = append(opts, "-v", dir+":"+ct.VolumeMounts[0].MountPath+":ro")
	var pods []*containertest.Container
	for i := range shards {
		args := make([]string, len(ct.Args))
		for k, a := range ct.Args {
			args[k] = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i))
		}
		pods = append(pods, containertest.Run(t, append(opts, "-e", "JOB_COMPLETION_INDEX="+strconv.Itoa(i)), args...))
	}
	for i, p := range pods {
		if code := p.Wait(); code != 0 {
			t.Fatalf("index %d exited %d:\n%s", i, code, p.Logs())
		}
	}
	local := filepath.Join(t.TempDir(), "runs.db")
	if out, err := runCLI(t, "sweep", spec, "--db", local, "--quiet"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want, got := sweepRows(t, local), sweepRows(t, db)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the containers' runs (%d) are not the single process's (%d):\n%s\nwant\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// sweepRows are a store's runs of the sweep "tiny", one line each with
// every figure to the bit, sorted.
func sweepRows(t *testing.T, dsn string) []string {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(context.Background(), store.Filter{Sweep: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range runs {
		line := fmt.Sprintf("%s %s %s %s %d/%d load %g key %s", r.Scenario, r.ScenarioHash, r.Policy, r.PolicyHash, r.RootSeed, r.Seeds, r.Load, r.Key)
		for _, k := range slices.Sorted(maps.Keys(r.Summary)) {
			line += fmt.Sprintf(" %s=%x/%x", k, r.Summary[k].Mean, r.Summary[k].CI95)
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

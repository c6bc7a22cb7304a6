package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/containertest"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/prom/promtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// tutorial is the getting-started guide whose commands TestGettingStarted
// runs.
var tutorial = filepath.Join(repoRoot, "docs", "guide", "getting-started.md")

var shBlock = regexp.MustCompile("(?ms)^```sh\n(.*?)^```")

// tutorialBlocks are the guide's shell blocks, in order.
func tutorialBlocks(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(tutorial)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range shBlock.FindAllStringSubmatch(string(raw), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestGettingStarted runs the getting-started guide's commands, block by
// block and in order, against the test control plane: web in namespace
// shop is played by 'shoal backend' processes behind 'shoal proxy' under
// 'shoal load' (20 req/s of 50 ms calls on one 1-core replica), with a
// real Prometheus. What differs from a reader's run, and why:
//   - the placeholders are filled in: PROMETHEUS is the test's server,
//     REGISTRY/shoal:TAG the image containertest builds;
//   - 'go build' and 'export PATH' are done by the test (the binary is on
//     PATH), and the image's build and push are TestImage's (no registry
//     here);
//   - 'shoal record' reads the last 40 s (the test's Prometheus is that
//     old, not an hour), the proxy's series (--queries shoal-proxy) at a 5 s
//     step, and the container the kubetest Deployment names (app);
//   - 'shoal train drpc' trains for 30 episodes, not 120, to keep the suite
//     short: the guide's default takes minutes;
//   - KWOK runs no containers, so after 'helm install' the test runs the
//     operator itself, with the chart Deployment's arguments and its
//     service account's token, as TestHelmChart does with the image.
//
// It checks what the guide says happens: the dry run reports a decision
// and changes nothing; live, the Autoscaler scales web up.
func TestGettingStarted(t *testing.T) {
	blocks := tutorialBlocks(t)
	if len(blocks) != 8 {
		t.Fatalf("the guide has %d shell blocks; this test knows 8 (install, simulate, record, train, check, install the operator, dry run, live)", len(blocks))
	}
	bin := buildShoal(t)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(mustAbs(t, repoRoot), "deploy", "helm"), filepath.Join(work, "deploy", "helm")); err != nil {
		t.Fatal(err)
	}

	c := kubetest.Start(t, 1)
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Deploy(t, "shop", "web", 1)
	listen, admin := promtest.FreeAddr(t), promtest.FreeAddr(t)
	ps := startPodServers(t, bin, c, "shop", "web", "exp:0.05", listen, admin)
	srv := promtest.StartGroups(t, promtest.Group{Targets: []string{c.ServeMetrics(t, ps.cpuSeconds)}},
		promtest.Group{Targets: []string{admin}, Labels: map[string]string{"namespace": "shop", "service": "web"}})
	load(t, bin, "http://"+listen+"/", 20)
	// The range 'shoal record' reads starts 40 s back: Prometheus must
	// hold the replica count there, so the range begins after its first
	// scrape of it, however slow the machine is.
	promtest.Wait(t, 60*time.Second, "the replica count", func() (bool, error) {
		resp, err := http.Get(srv.URL + "/api/v1/query?query=" + url.QueryEscape(`kube_deployment_status_replicas{namespace="shop"}`))
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var r struct {
			Data struct{ Result []json.RawMessage }
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return false, err
		}
		return len(r.Data.Result) > 0, nil
	})
	time.Sleep(45 * time.Second) // the range 'shoal record' reads

	helmHome := t.TempDir()
	image, tag, _ := strings.Cut(strings.TrimPrefix(containertest.Name, "localhost/"), ":")
	fill := strings.NewReplacer(
		"http://PROMETHEUS:9090", srv.URL,
		"REGISTRY/shoal", "localhost/"+image, "image.tag=TAG", "image.tag="+tag,
		"--start -1h", "--start -40s --queries shoal-proxy --step 5s",
		"--service web=web ", "--service web=web:app ",
		"-o drpc.policy", "-o drpc.policy --episodes 30",
	)
	shell := func(step int, script string) string {
		t.Helper()
		var kept []string
		for _, line := range strings.Split(script, "\n") {
			switch {
			case strings.HasPrefix(line, "go build "), strings.HasPrefix(line, "export PATH="),
				strings.HasPrefix(line, "bash scripts/image.sh "), strings.HasPrefix(line, "podman push "):
				continue
			}
			kept = append(kept, fill.Replace(line))
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(kept, "\n"))
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+kubetest.Bin()+":"+os.Getenv("PATH"),
			"KUBECONFIG="+c.Kubeconfig, "HELM_CACHE_HOME="+helmHome, "HELM_CONFIG_HOME="+helmHome, "HELM_DATA_HOME="+helmHome,
			"SHOAL_DB="+filepath.Join(work, "runs.db"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("step %d of the guide:\n%s\n%v\n%s", step+1, strings.Join(kept, "\n"), err, out.String())
		}
		t.Logf("step %d (%.0f s):\n%s", step+1, time.Since(start).Seconds(), tail(out.String(), 12))
		return out.String()
	}

	for i, b := range blocks[:5] { // install ... check the policy against the HPA
		out := shell(i, b)
		switch i {
		case 1:
			if !strings.Contains(out, "Bound, not deployable: oracle") {
				t.Errorf("the simulation's verdict names no bound:\n%s", out)
			}
		case 4:
			if !strings.Contains(out, "\ndrpc ") || !strings.Contains(out, "\nhpa ") {
				t.Errorf("the check runs neither drpc nor hpa:\n%s", out)
			}
		}
	}
	for _, f := range []string{"out/lb/report.html", "rec/scenario.yaml", "drpc.policy", "out/check/report.html"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Errorf("the guide's %s: %v", f, err)
		}
	}

	shell(5, blocks[5]) // helm install
	dep, err := c.Client.AppsV1().Deployments("shoal-system").Get(ctx, "shoal-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	args := overrideFlags(dep.Spec.Template.Spec.Containers[0].Args, map[string]string{"queries": "shoal-proxy",
		"min-window": "4s", "metrics-address": "0", "health-address": "0", "leader-elect": "false"})
	startOperator(t, serviceAccountKubeconfig(t, c, "shoal-system", dep.Spec.Template.Spec.ServiceAccountName), srv.URL, args[1:]...)

	// The dry run: a decision in the status, the Deployment untouched.
	shell(6, blocks[6])
	var desired int32
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := exec.Command(filepath.Join(kubetest.Bin(), "kubectl"), "--kubeconfig", c.Kubeconfig, "-n", "shop", "get", "autoscaler", "web",
			"-o", "jsonpath={.status.workloads[0].desiredReplicas}").Output()
		if err != nil || len(out) == 0 {
			return false, nil
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 32)
		desired = int32(n)
		return n > 1, nil
	})
	if err != nil {
		t.Fatalf("the dry run reported no scale-up of web at 20 req/s on one replica (desired %d): %v", desired, err)
	}
	lines := strings.Split(strings.TrimSpace(shell(6, lastCommand(blocks[6]))), "\n")
	if got := lines[len(lines)-1]; !regexp.MustCompile(`^dry-run 1 -> [2-9]$`).MatchString(got) {
		t.Errorf("the guide's status line in dry run: %q, want dry-run, 1 replica, and more desired", got)
	}
	if d, _ := c.Client.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 1 {
		t.Errorf("in dry run web has %d replicas, want the 1 it had", *d.Spec.Replicas)
	}

	// Live: the Autoscaler scales web up, and says who decided.
	shell(7, blocks[7])
	c.WaitReady(t, "shop", "web", 2, 2*time.Minute)
	lines = strings.Split(strings.TrimSpace(shell(7, lastCommand(blocks[7]))), "\n")
	if got := lines[len(lines)-1]; !regexp.MustCompile(`^(policy|fallback) [1-9] -> [2-9]$`).MatchString(got) {
		t.Errorf("the guide's status line when live: %q, want who decides, the replicas, and 2 or more set", got)
	}
}

// lastCommand is a shell block's last line.
func lastCommand(block string) string {
	lines := strings.Split(strings.TrimSpace(block), "\n")
	return lines[len(lines)-1]
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

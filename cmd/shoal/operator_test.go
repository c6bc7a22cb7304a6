package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom/promtest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestOperatorWithItsOwnRole: 'shoal operator', run as a user holding
// only deploy/helm/shoal/files/role.yaml's permissions and electing a leader, scales
// a Deployment by an Autoscaler from a real Prometheus on a real control
// plane; stopped part way, it stops cleanly, and a new one takes the
// lease and converges to the same end.
func TestOperatorWithItsOwnRole(t *testing.T) {
	c := kubetest.Start(t, 1)
	c.InstallCRDDir(t, filepath.Join(repoRoot, "deploy", "helm", "shoal", "crds"))
	c.Deploy(t, "default", "front", 1)
	srv := promtest.Start(t, c.ServeMetrics(t, kubetest.Busy(0.9)))

	kubeconfig := operatorUser(t, c)
	ctx := context.Background()
	scaleFront(t, c)
	// Stopped part way, a second operator (the lease released) takes over
	// and, level-based, drives front to the same end.
	stop := startOperator(t, kubeconfig, srv.URL)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "front", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas >= 2, nil
	})
	if err != nil {
		t.Fatalf("the first operator never scaled front: %v", err)
	}
	eventsAccepted(t, c, "default")
	stop()
	stop = startOperator(t, kubeconfig, srv.URL)
	c.WaitReady(t, "default", "front", 4, 2*time.Minute)
	stop()
}

// scaleFront creates the Autoscaler that scales default/front, 1 to 4
// replicas at 50% CPU, every 2 s.
func scaleFront(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
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
	if err := k.Create(context.Background(), as); err != nil {
		t.Fatal(err)
	}
}

// eventsAccepted fails unless the API server took both kinds of event the
// operator emits under its role: the leader election's (about its Lease in
// leaseNamespace), through the core group, and its decisions' (about
// Autoscalers in default), through events.k8s.io. A refused event is
// only logged, so its absence is the sign.
func eventsAccepted(t *testing.T, c *kubetest.Cluster, leaseNamespace string) {
	t.Helper()
	var leader, decisions int
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		core, err := c.Client.CoreV1().Events(leaseNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		leader = 0
		for _, e := range core.Items {
			if e.Reason == "LeaderElection" {
				leader++
			}
		}
		ev, err := c.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		decisions = 0
		for _, e := range ev.Items {
			if e.Regarding.Kind == "Autoscaler" && e.ReportingController == "shoal-operator" {
				decisions++
			}
		}
		return leader > 0 && decisions > 0, nil
	})
	if err != nil {
		t.Errorf("events the API server took from the operator: %d of the leader election (core group), %d of its decisions (events.k8s.io); want some of each", leader, decisions)
	}
}

// operatorUser returns the kubeconfig of a user holding only
// deploy/helm/shoal/files/role.yaml's permissions.
func operatorUser(t *testing.T, c *kubetest.Cluster) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "helm", "shoal", "files", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := c.User(t, "shoal-operator")
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shoal-operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: "rbac.authorization.k8s.io", Name: "shoal-operator"}}}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	return kubeconfig
}

// startOperator runs 'shoal operator' until the returned function stops
// it, which fails the test unless it stops cleanly within 30 s.
func startOperator(t *testing.T, kubeconfig, prometheus string, flags ...string) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := &syncBuffer{}
	go func() {
		done <- run(ctx, append([]string{"operator", "--kubeconfig", kubeconfig, "--prometheus", prometheus, "--leader-election-namespace", "default",
			"--metrics-address", "0", "--health-address", "0"}, flags...), io.Discard, log)
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("operator stopped with %v", err)
			}
		}
		if t.Failed() {
			t.Logf("operator's log:\n%s", log.String())
		}
	})
	return func() {
		t.Helper()
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("operator stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("operator did not stop 30 s after its context ended")
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom/promtest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestOperatorWithItsOwnRole: 'shoal operator', run as a user holding
// only deploy/rbac/role.yaml's permissions and electing a leader, scales
// a Deployment by an Autoscaler from a real Prometheus on a real control
// plane, and stops cleanly when its context ends.
func TestOperatorWithItsOwnRole(t *testing.T) {
	c := kubetest.Start(t, 1)
	c.InstallCRDDir(t, filepath.Join(repoRoot, "deploy", "crds"))
	c.Deploy(t, "default", "front", 1)
	srv := promtest.Start(t, c.ServeMetrics(t, func(*corev1.Pod) float64 { return 0.9 }))

	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "rbac", "role.yaml"))
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

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(rctx, []string{"operator", "--kubeconfig", kubeconfig, "--prometheus", srv.URL, "--leader-election-namespace", "default",
			"--metrics-address", "0", "--health-address", "0"}, io.Discard, io.Discard)
	}()

	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	as := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "default"},
		Spec: v1alpha1.AutoscalerSpec{Target: v1alpha1.Target{Name: "front", Container: "app"}, MinReplicas: 1, MaxReplicas: 3,
			TargetCPUUtilization: 50, Period: metav1.Duration{Duration: 2 * time.Second}}}
	if err := k.Create(ctx, as); err != nil {
		t.Fatal(err)
	}
	c.WaitReady(t, "default", "front", 3, 2*time.Minute)
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

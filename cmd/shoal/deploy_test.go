package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-project/shoal/kube/kubetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readManifests decodes a multi-document YAML file strictly into typed
// Kubernetes objects.
func readManifests(t *testing.T, path string) []client.Object {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var objs []client.Object
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if onlyComments(doc) {
			continue
		}
		obj, _, err := decode.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		objs = append(objs, obj.(client.Object))
	}
}

// onlyComments reports whether a YAML document holds nothing but comments
// and blank lines.
func onlyComments(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// TestOperatorManifests: deploy/operator.yaml decodes strictly; its
// binding grants the chart's role (deploy/helm/shoal/files/role.yaml) to the service account the
// Deployment runs as; the container's arguments are flags 'shoal
// operator' takes, with the probes and metrics on the ports it serves;
// and a real API server accepts it all, the operator's pods running.
func TestOperatorManifests(t *testing.T) {
	objs := readManifests(t, filepath.Join(repoRoot, "deploy", "operator.yaml"))
	generated := readManifests(t, filepath.Join(repoRoot, "deploy", "helm", "shoal", "files", "role.yaml"))[0].(*rbacv1.ClusterRole)
	var role *rbacv1.ClusterRole
	var sa *corev1.ServiceAccount
	var binding *rbacv1.ClusterRoleBinding
	var dep *appsv1.Deployment
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			role = o
		case *corev1.ServiceAccount:
			sa = o
		case *rbacv1.ClusterRoleBinding:
			binding = o
		case *appsv1.Deployment:
			dep = o
		}
	}
	if role == nil || sa == nil || binding == nil || dep == nil {
		t.Fatalf("deploy/operator.yaml lacks a ClusterRole, ServiceAccount, ClusterRoleBinding or Deployment")
	}
	if !reflect.DeepEqual(role.Rules, generated.Rules) {
		t.Errorf("the role's rules are not controller-gen's:\n%+v\n%+v", role.Rules, generated.Rules)
	}
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != sa.Name ||
		binding.Subjects[0].Namespace != sa.Namespace || dep.Spec.Template.Spec.ServiceAccountName != sa.Name || dep.Namespace != sa.Namespace {
		t.Errorf("binding %+v grants %s; service account %s/%s; the Deployment runs as %s in %s", binding.Subjects, binding.RoleRef.Name,
			sa.Namespace, sa.Name, dep.Spec.Template.Spec.ServiceAccountName, dep.Namespace)
	}
	ct := dep.Spec.Template.Spec.Containers[0]
	cmd := (&cli{stdout: io.Discard, stderr: io.Discard}).operatorCmd()
	if ct.Args[0] != "operator" {
		t.Fatalf("the container runs %q, want the operator", ct.Args)
	}
	if err := cmd.ParseFlags(ct.Args[1:]); err != nil {
		t.Fatalf("the container's arguments: %v", err)
	}
	ports := map[string]string{}
	for _, p := range ct.Ports {
		ports[p.Name] = strconv.Itoa(int(p.ContainerPort))
	}
	for flag, port := range map[string]string{"metrics-address": "metrics", "health-address": "health"} {
		_, p, err := net.SplitHostPort(cmd.Flags().Lookup(flag).Value.String())
		if err != nil || p != ports[port] {
			t.Errorf("--%s %s, but the %s port is %s", flag, cmd.Flags().Lookup(flag).Value, port, ports[port])
		}
	}
	if ct.LivenessProbe.HTTPGet.Path != "/healthz" || ct.ReadinessProbe.HTTPGet.Path != "/readyz" || ct.LivenessProbe.HTTPGet.Port.String() != "health" {
		t.Errorf("probes %+v %+v", ct.LivenessProbe.HTTPGet, ct.ReadinessProbe.HTTPGet)
	}

	c := kubetest.Start(t, 1)
	k, err := client.New(c.Config, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, o := range objs {
		if err := k.Create(ctx, o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var d appsv1.Deployment
		err := k.Get(ctx, client.ObjectKeyFromObject(dep), &d)
		return err == nil && d.Status.ReadyReplicas == *dep.Spec.Replicas, nil
	})
	if err != nil {
		t.Errorf("the operator's Deployment never had its %d replicas ready", *dep.Spec.Replicas)
	}
}

package v1alpha1

import (
	"os"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/control/policy"
	"sigs.k8s.io/yaml"
)

// Each CRD's policy enum is the registry's policies of its kind that run
// in the operator (control/policy): the names resolve in one place, and a
// policy marked for the operator is one a user can name.
func TestCRDPoliciesAreTheRegistrys(t *testing.T) {
	for _, c := range []struct {
		crd  string
		kind policy.Kind
	}{
		{"shoal.io_autoscalers.yaml", policy.Autoscaler},
		{"shoal.io_balancers.yaml", policy.Selector},
		{"shoal.io_routepolicies.yaml", policy.Route},
	} {
		raw, err := os.ReadFile("../../../deploy/helm/shoal/crds/" + c.crd)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Versions []struct {
					Schema struct {
						OpenAPIV3Schema struct {
							Properties struct {
								Spec struct {
									Properties struct {
										Policy struct {
											Enum []string `json:"enum"`
										} `json:"policy"`
									} `json:"properties"`
								} `json:"spec"`
							} `json:"properties"`
						} `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil || len(crd.Spec.Versions) == 0 {
			t.Fatalf("%s: %v", c.crd, err)
		}
		enum := slices.Sorted(slices.Values(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties.Policy.Enum))
		var want []string
		for _, p := range policy.All() {
			if p.Kind == c.kind && p.Runs&policy.Operator != 0 {
				want = append(want, p.Name)
			}
		}
		slices.Sort(want)
		if !slices.Equal(enum, want) {
			t.Errorf("%s: the policy enum is %v; the registry's %ss that run in the operator are %v", c.crd, enum, c.kind, want)
		}
	}
}

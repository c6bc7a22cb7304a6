package scenario

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/control/policy"
	"go.yaml.in/yaml/v3"
)

// Autoscaling configures the production autoscalers that a comparison can
// name as policies. Each kind's settings apply to every managed service;
// a service's own min_replicas and max_replicas bound its replicas.
type Autoscaling struct {
	// Services are the services the autoscalers manage (default: every
	// service with max_replicas set).
	Services []string `yaml:"services"`
	// HPA is the Kubernetes HPA (default: CPU at 80% of the request).
	HPA autoscale.HPAConfig `yaml:"hpa"`
	// KPA is the Knative Pod Autoscaler.
	KPA autoscale.KPAConfig `yaml:"kpa"`
	// KEDA scales on the request rate (threshold: req/s per replica).
	KEDA autoscale.KEDAConfig `yaml:"keda"`
	// OpenFaaS scales on rps or in-flight requests per replica.
	OpenFaaS autoscale.OpenFaaSConfig `yaml:"openfaas"`
	// VPA recommends (mode Off) or sets (Auto) CPU and memory limits.
	VPA autoscale.VPAConfig `yaml:"vpa"`
	// Overrides change some settings of a kind for one service, as an
	// operator tunes each ScaledObject or function, e.g.
	// {service: ts-auth-service, keda: {threshold: 6}}.
	Overrides []Override `yaml:"overrides"`
}

// Override holds one service's settings that differ from the kinds'.
// They are decoded, strictly, over the kind's settings when the
// autoscaler is built.
type Override struct {
	// Service is the managed service the override applies to.
	Service string `yaml:"service"`
	// HPA, KPA, KEDA, OpenFaaS and VPA are the settings of that kind that
	// differ for the service, in the form of the kind's own section.
	HPA      yaml.Node `yaml:"hpa"`
	KPA      yaml.Node `yaml:"kpa"`
	KEDA     yaml.Node `yaml:"keda"`
	OpenFaaS yaml.Node `yaml:"openfaas"`
	VPA      yaml.Node `yaml:"vpa"`
}

// node is the override of kind, nil when none is set.
func (o *Override) node(kind string) *yaml.Node {
	var n *yaml.Node
	switch kind {
	case "hpa":
		n = &o.HPA
	case "kpa":
		n = &o.KPA
	case "keda":
		n = &o.KEDA
	case "openfaas":
		n = &o.OpenFaaS
	case "vpa":
		n = &o.VPA
	}
	if n == nil || n.Kind == 0 {
		return nil
	}
	return n
}

// withOverride is a deep copy of base with the service's override of the
// kind decoded over it.
func withOverride[T any](base T, a *Autoscaling, kind, service string) (T, error) {
	var out T
	data, err := yaml.Marshal(base)
	if err == nil {
		err = strictDecode(data, &out)
	}
	if err != nil {
		return out, fmt.Errorf("copy settings: %w", err)
	}
	for i := range a.Overrides {
		o := &a.Overrides[i]
		if n := o.node(kind); o.Service == service && n != nil {
			data, err := yaml.Marshal(n)
			if err == nil {
				err = strictDecode(data, &out)
			}
			if err != nil {
				return out, fmt.Errorf("overrides[%d].%s: %s", i, kind, yamlMessage(err))
			}
		}
	}
	return out, nil
}

// yamlMessage is a decoding error without the line numbers, which refer to
// the re-encoded override, not to the file.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: "), "unmarshal errors:\n")
	return lineRef.ReplaceAllString(msg, "")
}

var lineRef = regexp.MustCompile(`(?m)^\s*line \d+: `)

func strictDecode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// builtinAutoscalers are the registered autoscalers this package builds
// from the autoscaling section: every one without a file (static, hpa,
// kpa, keda, openfaas, vpa). A learned one (drpc:FILE) is built from its
// file.
func builtinAutoscalers() []string {
	var out []string
	for _, p := range policy.All() {
		if p.Kind == policy.Autoscaler && p.File == policy.NoFile {
			out = append(out, p.Name)
		}
	}
	return out
}

// ManagedServices are the names of the services the autoscalers manage.
func (s *Scenario) ManagedServices() []string {
	if len(s.Autoscaling.Services) > 0 {
		return s.Autoscaling.Services
	}
	var names []string
	for _, sv := range s.Services {
		if sv.MaxReplicas > 0 {
			names = append(names, sv.Name)
		}
	}
	return names
}

// Autoscalers builds the controllers of an autoscaler policy (hpa,
// hpa:target=45, kpa+vpa), one per kind and managed service, the policy's
// settings over the autoscaling section's.
func (s *Scenario) Autoscalers(name string) ([]control.Controller, error) {
	spec, err := policy.Parse(name)
	if err != nil {
		return nil, err
	}
	var out []control.Controller
	for _, part := range spec.Members() {
		if !slices.Contains(builtinAutoscalers(), part.Name()) {
			return nil, fmt.Errorf("policy %s: not an autoscaler built from the scenario (%s, joined with +)", name, strings.Join(builtinAutoscalers(), ", "))
		}
		if part.Name() != "static" && len(s.ManagedServices()) == 0 {
			return nil, fmt.Errorf("policy %s: no service is autoscaled (set max_replicas, or list them in autoscaling.services)", name)
		}
		for _, svc := range s.ManagedServices() {
			c, err := s.autoscaler(part, svc)
			if err != nil {
				return nil, fmt.Errorf("autoscaling for %s: %w", svc, err)
			}
			if c != nil {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// ConfigFor is the cluster configuration an autoscaler policy runs: the
// scenario's, or with static:scale=X a copy whose autoscaled services
// start with X times their replicas (rounded up, within their bounds), and
// with static:resources=Y, Y times their CPU and memory limits.
func (s *Scenario) ConfigFor(name string) (*cluster.Config, error) {
	spec, err := policy.Parse(name)
	if err != nil {
		return nil, err
	}
	for _, p := range spec.Members() {
		if p.Name() != "static" {
			continue
		}
		scale, scaled := p.Get("scale")
		res, sized := p.Get("resources")
		if !scaled && !sized {
			continue
		}
		cfg := s.Config
		cfg.Services = slices.Clone(s.Services)
		for _, svc := range s.ManagedServices() {
			sv := &cfg.Services[slices.IndexFunc(cfg.Services, func(c cluster.Service) bool { return c.Name == svc })]
			if len(sv.Instances) > 0 {
				return nil, fmt.Errorf("policy %s: service %s lists its instances one by one; static:scale and resources scale its replicas' template", name, sv.Name)
			}
			if scaled {
				r := int(math.Ceil(float64(max(sv.Replicas, 1)) * scale))
				r = max(r, sv.MinReplicas, 1)
				if sv.MaxReplicas > 0 {
					r = min(r, sv.MaxReplicas)
				}
				sv.Replicas = r
			}
			if sized {
				sv.CPU *= res
				sv.MemoryMB *= res
			}
		}
		return &cfg, nil
	}
	return &s.Config, nil
}

// autoscaler builds one kind's controller for one service (nil: static).
// The policy's settings (hpa:target=45) apply after the service's
// override: they are the policy's, for every service.
func (s *Scenario) autoscaler(p policy.Spec, service string) (control.Controller, error) {
	i := slices.IndexFunc(s.Services, func(sv cluster.Service) bool { return sv.Name == service })
	lo, hi := s.Services[i].MinReplicas, s.Services[i].MaxReplicas
	a := &s.Autoscaling
	kind := p.Name()
	set := func(name string, dst *float64) {
		if v, ok := p.Get(name); ok {
			*dst = v
		}
	}
	switch kind {
	case "hpa":
		return build(a, kind, service, a.HPA, autoscale.NewHPA, func(c *autoscale.HPAConfig) {
			c.Service, c.MinReplicas, c.MaxReplicas = service, max(lo, 1), hi
			if v, ok := p.Get("target"); ok {
				c.Metrics = []autoscale.HPAMetric{{Kind: autoscale.MetricCPU, Target: v}}
			}
			set("tolerance", &c.Tolerance)
		})
	case "kpa":
		return build(a, kind, service, a.KPA, autoscale.NewKPA, func(c *autoscale.KPAConfig) {
			c.Service, c.MinScale, c.MaxScale = service, lo, hi
			set("concurrency", &c.TargetConcurrency)
			set("utilization", &c.TargetUtilization)
			if f, ok := p.Get("scale"); ok {
				c.TargetConcurrency = cmp.Or(c.TargetConcurrency, 100) * f // 100: Knative's default (autoscale.NewKPA)
			}
		})
	case "keda":
		return build(a, kind, service, a.KEDA, autoscale.NewKEDA, func(c *autoscale.KEDAConfig) {
			c.Service, c.MinReplicaCount, c.MaxReplicaCount = service, lo, hi
			set("threshold", &c.Threshold)
		})
	case "openfaas":
		return build(a, kind, service, a.OpenFaaS, autoscale.NewOpenFaaS, func(c *autoscale.OpenFaaSConfig) {
			c.Service, c.MinReplicas, c.MaxReplicas = service, max(lo, 1), hi
			set("target", &c.Target)
		})
	case "vpa":
		return build(a, kind, service, a.VPA, autoscale.NewVPA, func(c *autoscale.VPAConfig) { c.Service = service })
	}
	return nil, nil
}

// build makes one controller: the kind's settings with the service's
// override, the service's name and bounds, and the constructor's field
// errors prefixed with the kind.
func build[T any, C control.Controller](a *Autoscaling, kind, service string, base T, ctor func(T) (C, error), bind func(*T)) (control.Controller, error) {
	cfg, err := withOverride(base, a, kind, service)
	if err != nil {
		return nil, err
	}
	bind(&cfg)
	c, err := ctor(cfg)
	if err != nil {
		return nil, prefixLines(kind+".", err)
	}
	return c, nil
}

// validateAutoscaling checks the section: known services with a replica
// bound, and settings every kind accepts.
func (s *Scenario) validateAutoscaling() error {
	var errs []error
	for i, name := range s.Autoscaling.Services {
		j := slices.IndexFunc(s.Services, func(sv cluster.Service) bool { return sv.Name == name })
		switch {
		case j < 0:
			errs = append(errs, fmt.Errorf("autoscaling.services[%d]: unknown service %q", i, name))
		case s.Services[j].MaxReplicas == 0:
			errs = append(errs, fmt.Errorf("services[%d].max_replicas: service %q is autoscaled, so it needs max_replicas > 0", j, name))
		}
	}
	managed := s.ManagedServices()
	for i, o := range s.Autoscaling.Overrides {
		if !slices.Contains(managed, o.Service) {
			errs = append(errs, fmt.Errorf("autoscaling.overrides[%d].service: %q is not an autoscaled service", i, o.Service))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, kind := range builtinAutoscalers() {
		if !s.autoscalerUsed(kind) {
			continue
		}
		p, _ := policy.Parse(kind)
		for j, name := range managed {
			if _, err := s.autoscaler(p, name); err != nil {
				errs = append(errs, prefixLines("autoscaling.", err))
				break
			}
			if j > 0 && !s.overridden(kind, name) {
				continue // the kind's own settings were checked with the first service
			}
		}
	}
	return errors.Join(errs...)
}

// autoscalerUsed reports whether a kind is configured in the section or
// named by the scenario's policies: the kinds checked at load time (KEDA,
// for one, has no default threshold).
func (s *Scenario) autoscalerUsed(kind string) bool {
	for _, name := range s.Policies {
		spec, err := policy.Parse(name)
		if err == nil && slices.ContainsFunc(spec.Members(), func(p policy.Spec) bool { return p.Name() == kind }) {
			return true
		}
	}
	a := &s.Autoscaling
	settings := map[string]any{"hpa": a.HPA, "kpa": a.KPA, "keda": a.KEDA, "openfaas": a.OpenFaaS, "vpa": a.VPA}[kind]
	return settings != nil && !reflect.ValueOf(settings).IsZero()
}

// overridden reports whether a service has an override of kind.
func (s *Scenario) overridden(kind, service string) bool {
	return slices.ContainsFunc(s.Autoscaling.Overrides, func(o Override) bool { return o.Service == service && o.node(kind) != nil })
}

// prefixLines puts a field-path prefix on every line of a joined error.
func prefixLines(prefix string, err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return errors.New(strings.Join(lines, "\n"))
}

// SetSLO sets the response-time target of every class.
func (s *Scenario) SetSLO(d time.Duration) {
	s.SLO = d
	for i := range s.Classes {
		s.Classes[i].SLO = 0
	}
}

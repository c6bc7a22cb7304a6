package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autoscale"
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
}

// Autoscaler kinds a policy can name; "static" keeps the scenario's
// configuration. A policy "a+b" runs several kinds together (hpa+vpa).
var autoscalerKinds = []string{"static", "hpa", "kpa", "keda", "openfaas"}

// AutoscalerKinds lists the autoscaler kinds in order.
func AutoscalerKinds() []string { return slices.Clone(autoscalerKinds) }

// IsAutoscalerPolicy reports whether a policy name is made of autoscaler
// kinds ("hpa", "kpa+vpa").
func IsAutoscalerPolicy(name string) bool {
	for _, k := range strings.Split(name, "+") {
		if !slices.Contains(autoscalerKinds, k) {
			return false
		}
	}
	return name != ""
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

// Autoscalers builds the controllers of an autoscaler policy, one per kind
// and managed service. It fails for names IsAutoscalerPolicy rejects.
func (s *Scenario) Autoscalers(policy string) ([]control.Controller, error) {
	if !IsAutoscalerPolicy(policy) {
		return nil, fmt.Errorf("unknown autoscaler policy %q (kinds: %s, joined with +)", policy, strings.Join(autoscalerKinds, ", "))
	}
	var out []control.Controller
	for _, kind := range strings.Split(policy, "+") {
		if kind != "static" && len(s.ManagedServices()) == 0 {
			return nil, fmt.Errorf("policy %s: no service is autoscaled (set max_replicas, or list them in autoscaling.services)", policy)
		}
		for _, name := range s.ManagedServices() {
			c, err := s.autoscaler(kind, name)
			if err != nil {
				return nil, fmt.Errorf("autoscaling.%s for %s: %w", kind, name, err)
			}
			if c != nil {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// autoscaler builds one kind's controller for one service (nil: static).
func (s *Scenario) autoscaler(kind, service string) (control.Controller, error) {
	i := slices.IndexFunc(s.Services, func(sv cluster.Service) bool { return sv.Name == service })
	sv := &s.Services[i]
	a := &s.Autoscaling
	switch kind {
	case "hpa":
		cfg := a.HPA
		cfg.Service, cfg.MinReplicas, cfg.MaxReplicas = service, max(sv.MinReplicas, 1), sv.MaxReplicas
		return autoscale.NewHPA(cfg)
	case "kpa":
		cfg := a.KPA
		cfg.Service, cfg.MinScale, cfg.MaxScale = service, sv.MinReplicas, sv.MaxReplicas
		return autoscale.NewKPA(cfg)
	case "keda":
		cfg := a.KEDA
		cfg.Service, cfg.MinReplicaCount, cfg.MaxReplicaCount = service, sv.MinReplicas, sv.MaxReplicas
		return autoscale.NewKEDA(cfg)
	case "openfaas":
		cfg := a.OpenFaaS
		cfg.Service, cfg.MinReplicas, cfg.MaxReplicas = service, max(sv.MinReplicas, 1), sv.MaxReplicas
		return autoscale.NewOpenFaaS(cfg)
	}
	return nil, nil
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
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, kind := range autoscalerKinds {
		if !s.autoscalerUsed(kind) {
			continue
		}
		for _, name := range s.ManagedServices() {
			if _, err := s.autoscaler(kind, name); err != nil {
				errs = append(errs, prefixLines("autoscaling."+kind+".", err))
			}
			break // the settings are the same for every service
		}
	}
	return errors.Join(errs...)
}

// autoscalerUsed reports whether a kind is configured in the section or
// named by the scenario's policies: the kinds checked at load time (KEDA,
// for one, has no default threshold).
func (s *Scenario) autoscalerUsed(kind string) bool {
	for _, p := range s.Policies {
		if IsAutoscalerPolicy(p) && slices.Contains(strings.Split(p, "+"), kind) {
			return true
		}
	}
	v := reflect.ValueOf(s.Autoscaling)
	for i := range v.NumField() {
		if strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0] == kind {
			return !v.Field(i).IsZero()
		}
	}
	return false
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

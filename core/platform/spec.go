// SPDX-License-Identifier: Apache-2.0

// Package platform is the pure core of the Platform component: from a Spec, the objects that
// install a cluster's prerequisites (LeaderWorkerSet, Volcano, the Inference Extension's and
// llm-d router's CRDs, KEDA, prometheus-operator's PodMonitor CRD) at the versions the e2e suite
// runs, from their upstream release manifests (third_party/platform). No I/O, no Pulumi.
// docs/design/0021-platform.md says why each part is what it is.
package platform

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// Spec says which prerequisites a Platform installs. Every part is installed unless its
// install is false.
type Spec struct {
	// LeaderWorkerSet: LWS v0.9.0 (CRDs, RBAC, webhooks, controller) in lws-system, its own gang
	// scheduling management off: the service's PodGroup gangs its pods.
	LeaderWorkerSet *Part `json:"leaderWorkerSet,omitempty" pulumi:"leaderWorkerSet,optional"`
	// Volcano: the gang scheduler Volcano v1.14.1 (CRDs, RBAC, admission, controllers, scheduler)
	// in volcano-system.
	Volcano *VolcanoPart `json:"volcano,omitempty" pulumi:"volcano,optional"`
	// InferenceExtension: the InferencePool CRDs (inference.networking.k8s.io/v1, and
	// inference.networking.x-k8s.io/v1alpha2 for poolApiVersion v1alpha2) and the InferenceObjective
	// and InferenceModelRewrite CRDs in both groups the releases read them in, the set a router's
	// endpointPicker.crdGroups names by default (both): inference.networking.x-k8s.io, the GIE
	// releases' only group, and llm-d.ai, which llm-d-router v0.10.0 prefers when it is served (its
	// pkg/epp/server/controller_config.go populateWithDiscovery), as llm-d-router's chart installs
	// it. From the Gateway API Inference Extension v1.2.0 (the pools) and v1.5.0 (the objectives and
	// rewrites: the EPPs that read rewrites decode v1.5.0's rule, whose "targets" v1.2.0's CRD would
	// prune; llm-d-router's llm-d.ai CRDs are the same with the group renamed).
	InferenceExtension *Part `json:"inferenceExtension,omitempty" pulumi:"inferenceExtension,optional"`
	// GatewayAPI: the Gateway API's CRDs of its standard channel, v1.5.1 (GatewayClass, Gateway,
	// HTTPRoute, GRPCRoute, ReferenceGrant, BackendTLSPolicy, ListenerSet, TLSRoute, and the
	// policy that refuses an older channel's CRDs over them), what a router in gateway mode needs
	// for its HTTPRoute, the version whose types the render uses. Off by default: a standalone
	// router needs none of it, and a gateway's installer or the cloud often owns these CRDs.
	GatewayAPI *OptionalPart `json:"gatewayAPI,omitempty" pulumi:"gatewayAPI,optional"`
	// KEDA: the autoscaler KEDA v2.21.0 (CRDs, RBAC, operator, metrics server, admission webhooks)
	// in keda.
	KEDA *Part `json:"keda,omitempty" pulumi:"keda,optional"`
	// PrometheusOperatorCRDs: the PodMonitor CRD of prometheus-operator v0.88.0, the kind a
	// service's monitoring emits; a cluster that runs the operator has it already.
	PrometheusOperatorCRDs *Part `json:"prometheusOperatorCRDs,omitempty" pulumi:"prometheusOperatorCRDs,optional"`
	// Controllers: whether to install the controllers; false leaves out every controller's Deployment,
	// Service, Job, Secret and APIService, for controllers that run elsewhere (the e2e suite runs them
	// as processes); the CRDs, namespaces, RBAC, configuration and webhook configurations stay. The
	// webhooks (and the LWS CRD's conversion webhook) still name the left-out Services with
	// failurePolicy Fail, so whatever runs the controllers must serve them there or point their
	// clientConfig at itself, as the e2e suite does (tests/cluster/platform.go); until then creates of
	// those kinds are refused. Default true.
	Controllers *bool `json:"controllers,omitempty" pulumi:"controllers,optional" default:"true"`
}

// Part is one prerequisite.
type Part struct {
	// Install: whether to install the part (default true).
	Install *bool `json:"install,omitempty" pulumi:"install,optional" default:"true"`
}

// OptionalPart is a prerequisite installed only when asked for.
type OptionalPart struct {
	// Install: whether to install the part (default false).
	Install *bool `json:"install,omitempty" pulumi:"install,optional" default:"false"`
}

// VolcanoPart is Volcano, with its scheduler's configuration.
type VolcanoPart struct {
	// Install: whether to install Volcano (default true).
	Install *bool `json:"install,omitempty" pulumi:"install,optional" default:"true"`
	// SchedulerConfiguration replaces volcano-scheduler.conf, Volcano's default (actions enqueue,
	// allocate, backfill; plugins priority, gang, conformance, overcommit, drf, predicates,
	// proportion, nodeorder, binpack). It must keep what the gang rules need: the actions enqueue
	// and allocate and the plugins gang, predicates and proportion.
	SchedulerConfiguration string `json:"schedulerConfiguration,omitempty" pulumi:"schedulerConfiguration,optional"`
}

// The part names, as Object.Part gives them.
const (
	PartLeaderWorkerSet        = "leaderWorkerSet"
	PartVolcano                = "volcano"
	PartInferenceExtension     = "inferenceExtension"
	PartGatewayAPI             = "gatewayAPI"
	PartKEDA                   = "keda"
	PartPrometheusOperatorCRDs = "prometheusOperatorCRDs"
)

// Parts are every part, in install order.
var Parts = []string{PartLeaderWorkerSet, PartVolcano, PartInferenceExtension, PartGatewayAPI, PartKEDA, PartPrometheusOperatorCRDs}

// Installs says whether the spec installs a part.
func (s *Spec) Installs(part string) bool {
	var install *bool
	switch part {
	case PartGatewayAPI:
		return s.GatewayAPI != nil && s.GatewayAPI.Install != nil && *s.GatewayAPI.Install
	case PartLeaderWorkerSet:
		install = installOf(s.LeaderWorkerSet)
	case PartVolcano:
		if s.Volcano != nil {
			install = s.Volcano.Install
		}
	case PartInferenceExtension:
		install = installOf(s.InferenceExtension)
	case PartKEDA:
		install = installOf(s.KEDA)
	case PartPrometheusOperatorCRDs:
		install = installOf(s.PrometheusOperatorCRDs)
	default:
		return false
	}
	return install == nil || *install
}

func installOf(p *Part) *bool {
	if p == nil {
		return nil
	}
	return p.Install
}

// WithControllers says whether the controllers' own objects are rendered.
func (s *Spec) WithControllers() bool { return s.Controllers == nil || *s.Controllers }

// Decode reads a Spec from YAML or JSON as strictly as a manifest (api.DecodeStrictly: every
// unknown field named by its path, with the field it may have meant).
func Decode(data []byte) (*Spec, error) {
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("platform spec: %w", err)
	}
	var spec Spec
	if err := api.DecodeStrictly(jsonData, &spec); err != nil {
		return nil, fmt.Errorf("platform spec: %w", err)
	}
	return &spec, nil
}

// DecodeFile reads a Spec from a file as strictly as a manifest; its problems, and Validate's
// through the FileLines, are each at their line of the file (api.DecodeFile). A spec decoding
// read but for some values is returned with its error too: Validate's verdict on the rest,
// through lines.Error, says every problem at once.
func DecodeFile(file string, data []byte) (*Spec, api.FileLines, error) {
	var spec Spec
	lines, err := api.DecodeFile(file, data, &spec)
	if err != nil && !lines.Decoded() {
		return nil, lines, err
	}
	return &spec, lines, err
}

// SchedulerConfiguration is the part of Volcano's scheduler configuration the gang rules read.
type SchedulerConfiguration struct {
	Actions string `json:"actions"`
	Tiers   []struct {
		Plugins []struct {
			Name string `json:"name"`
		} `json:"plugins"`
	} `json:"tiers"`
}

// What the gang rules need of Volcano's scheduler: enqueue admits a PodGroup whose minimal
// resources fit, allocate binds a gang only whole; gang holds back a job until minMember (and
// each subgroup's) can run, predicates fits pods to nodes (GPUs, selectors, affinity), proportion
// gives the queue its share (docs/scheduling.md).
var (
	gangActions = []string{"enqueue", "allocate"}
	gangPlugins = []string{"gang", "predicates", "proportion"}
)

// Validate returns every problem of the spec, with its field path.
func Validate(s *Spec) field.ErrorList {
	var errs field.ErrorList
	if !slices.ContainsFunc(Parts, s.Installs) {
		errs = append(errs, field.Invalid(field.NewPath(PartLeaderWorkerSet, "install"), false,
			"every part's install is false, so there is nothing to install: install one part at least"))
	}
	if s.Volcano != nil && s.Volcano.SchedulerConfiguration != "" {
		errs = append(errs, validateSchedulerConfiguration(s.Volcano.SchedulerConfiguration,
			field.NewPath("volcano", "schedulerConfiguration"))...)
	}
	return errs
}

func validateSchedulerConfiguration(text string, path *field.Path) field.ErrorList {
	var conf SchedulerConfiguration
	if err := yaml.UnmarshalStrict([]byte(text), &conf); err != nil {
		// Volcano's configuration has more fields than the ones read here (configurations,
		// arguments): only a document that does not parse at all is refused, with the parser's
		// words (YAMLToJSON's, without sigs.k8s.io/yaml's "error converting YAML to JSON").
		if _, err := yaml.YAMLToJSON([]byte(text)); err != nil {
			return field.ErrorList{field.Invalid(path, field.OmitValueType{}, "not a Volcano scheduler configuration: "+err.Error())}
		}
		if err := yaml.Unmarshal([]byte(text), &conf); err != nil {
			return field.ErrorList{field.Invalid(path, field.OmitValueType{},
				"not a Volcano scheduler configuration, whose actions is a string and tiers a list of plugin lists")}
		}
	}
	var errs field.ErrorList
	actions := strings.Split(strings.ReplaceAll(conf.Actions, " ", ""), ",")
	missingActions := slices.DeleteFunc(slices.Clone(gangActions), func(a string) bool { return slices.Contains(actions, a) })
	switch {
	case strings.TrimSpace(conf.Actions) == "":
		errs = append(errs, field.Required(path.Child("actions"), "the gang rules need the actions "+and(gangActions)))
	case len(missingActions) > 0:
		errs = append(errs, field.Invalid(path.Child("actions"), conf.Actions, "the gang rules need "+named("action", missingActions)))
	}
	var plugins []string
	for _, tier := range conf.Tiers {
		for _, plugin := range tier.Plugins {
			plugins = append(plugins, plugin.Name)
		}
	}
	missingPlugins := slices.DeleteFunc(slices.Clone(gangPlugins), func(p string) bool { return slices.Contains(plugins, p) })
	switch {
	case len(plugins) == 0:
		errs = append(errs, field.Required(path.Child("tiers"), "the gang rules need the plugins "+and(gangPlugins)))
	case len(missingPlugins) > 0:
		errs = append(errs, field.Invalid(path.Child("tiers"), strings.Join(plugins, ", "), "the gang rules need "+named("plugin", missingPlugins)))
	}
	return errs
}

// and is names as a message lists them: "a", "a and b", "a, b and c".
func and(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// named is "the plugin a", or "the plugins a and b".
func named(kind string, names []string) string {
	if len(names) == 1 {
		return "the " + kind + " " + names[0]
	}
	return "the " + kind + "s " + and(names)
}

// ValidationError is a spec's problems.
type ValidationError struct{ Errors field.ErrorList }

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		lines[i] = "  " + err.Error()
	}
	return "invalid Platform:\n" + strings.Join(lines, "\n")
}

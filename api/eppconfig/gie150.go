// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

// GIE v1.5.0's Endpoint Picker configuration, as the project's own types: the project's module
// pins GIE v1.2.0 (its types and its oracle), so v1.5.0's types and its loader's rules are written
// here from its source (sigs.k8s.io/gateway-api-inference-extension@v1.5.0), each rule citing the
// file and function it mirrors. The EPP's own loader is the oracle of these rules in the tests
// (oracle/gie-v1.5.0, gie150_test.go).

// GIE150GroupVersion is the configuration's apiVersion (apix/config/v1alpha1/zz_generated.register.go).
const GIE150GroupVersion = "inference.networking.x-k8s.io/v1alpha1"

// GIE150Config is GIE v1.5.0's EndpointPickerConfig (apix/config/v1alpha1/endpointpickerconfig_types.go).
type GIE150Config struct {
	APIVersion         string                    `json:"apiVersion"`
	Kind               string                    `json:"kind"`
	FeatureGates       []string                  `json:"featureGates,omitempty"`
	Plugins            []RouterPlugin            `json:"plugins"`
	SchedulingProfiles []RouterSchedulingProfile `json:"schedulingProfiles"`
	SaturationDetector *RouterPluginRef          `json:"saturationDetector,omitempty"`
	DataLayer          *GIE150DataLayer          `json:"dataLayer,omitempty"`
	FlowControl        *GIE150FlowControl        `json:"flowControl,omitempty"`
	Parser             *RouterPluginRef          `json:"parser,omitempty"`
}

// GIE150DataLayer is the DataLayerConfig: its sources and their extractors.
type GIE150DataLayer struct {
	Sources []RouterDataSource `json:"sources"`
}

// GIE150FlowControl is the FlowControlConfig, read when the flowControl feature gate is on.
type GIE150FlowControl struct {
	MaxBytes                  *resource.Quantity   `json:"maxBytes,omitempty"`
	MaxRequests               *resource.Quantity   `json:"maxRequests,omitempty"`
	DefaultRequestTTL         *metav1.Duration     `json:"defaultRequestTTL,omitempty"`
	DefaultPriorityBand       *GIE150PriorityBand  `json:"defaultPriorityBand,omitempty"`
	PriorityBands             []GIE150PriorityBand `json:"priorityBands,omitempty"`
	UsageLimitPolicyPluginRef string               `json:"usageLimitPolicyPluginRef,omitempty"`
}

// GIE150PriorityBand is a PriorityBandConfig.
type GIE150PriorityBand struct {
	Priority          int                `json:"priority"`
	MaxBytes          *resource.Quantity `json:"maxBytes,omitempty"`
	MaxRequests       *resource.Quantity `json:"maxRequests,omitempty"`
	FairnessPolicyRef string             `json:"fairnessPolicyRef,omitempty"`
	OrderingPolicyRef string             `json:"orderingPolicyRef,omitempty"`
}

// Feature gates GIE v1.5.0's runner registers (cmd/epp/runner/runner.go parseConfigurationPhaseOne).
const (
	gateDataLayer     = "dataLayer" // deprecated: the data layer is on by default
	gateLegacyMetrics = "enableLegacyMetrics"
	gateFlowControl   = "flowControl"
)

var gie150FeatureGates = sets.New(gateDataLayer, gateLegacyMetrics, gateFlowControl)

// ParseGIE150 decodes a raw configuration as GIE v1.5.0's loader does (pkg/epp/config/loader/
// configloader.go decodeRawConfig: a strict codec of this one kind; applyStaticDefaults: a plugin
// is named after its type), with the warnings the runner logs.
func ParseGIE150(raw string) (*GIE150Config, []string, error) {
	cfg := &GIE150Config{}
	if err := yaml.UnmarshalStrict([]byte(raw), cfg); err != nil {
		return nil, nil, fmt.Errorf("the configuration is invalid - %w", err)
	}
	if cfg.APIVersion != GIE150GroupVersion || cfg.Kind != kindEndpointPickerConfig {
		return nil, nil, fmt.Errorf("the configuration is invalid - apiVersion %q and kind %q: want %s and %s (GIE v1.5.0's EPP reads no other)",
			cfg.APIVersion, cfg.Kind, GIE150GroupVersion, kindEndpointPickerConfig)
	}
	for i := range cfg.Plugins {
		if cfg.Plugins[i].Name == "" {
			cfg.Plugins[i].Name = cfg.Plugins[i].Type
		}
	}
	var warnings []string
	if slices.Contains(cfg.FeatureGates, gateDataLayer) {
		// runner.go parseConfigurationPhaseOne.
		warnings = append(warnings, "featureGates: dataLayer: the data layer is on by default in GIE v1.5.0; remove the gate")
	}
	return cfg, warnings, nil
}

// MarshalGIE150 renders a configuration for the EPP's ConfigMap.
func MarshalGIE150(cfg *GIE150Config) (string, error) {
	out := *cfg
	out.APIVersion, out.Kind = GIE150GroupVersion, kindEndpointPickerConfig
	out.Plugins = append([]RouterPlugin(nil), cfg.Plugins...)
	for i := range out.Plugins {
		if out.Plugins[i].Name == out.Plugins[i].Type {
			out.Plugins[i].Name = ""
		}
	}
	data, err := yaml.Marshal(out)
	return string(data), err
}

// gie150Loaded is the configuration as the loader holds it once it has instantiated the plugins
// and added its defaults: every plugin by name, with its type.
type gie150Loaded map[string]string

func (l gie150Loaded) is(name string, k gie150Kind) bool {
	t, ok := l[name]
	return ok && gie150Plugins[t].kinds&k != 0
}

// CheckGIE150 applies to a configuration what GIE v1.5.0's EPP does at start-up (cmd/epp/runner/
// runner.go: parseConfigurationPhaseOne, then parseConfigurationPhaseTwo and
// configureAndStartDatalayer), with the plugins its runner registers (registerInTreePlugins).
// The error names what it refuses with its path in the configuration.
func CheckGIE150(cfg *GIE150Config) error {
	// configloader.go LoadRawConfig: validateFeatureGates.
	for i, gate := range cfg.FeatureGates {
		if !gie150FeatureGates.Has(gate) {
			return fmt.Errorf("featureGates[%d]: feature gate '%s' is unknown or unregistered; GIE v1.5.0 has: %s", i, gate, strings.Join(sets.List(gie150FeatureGates), ", "))
		}
	}
	gates := sets.New(cfg.FeatureGates...)
	// configloader.go instantiatePlugins: a type, a unique name, a registered type, its factory.
	loaded := gie150Loaded{}
	prefixScorer, prefixParams := false, json.RawMessage(nil)
	for i, p := range cfg.Plugins {
		path := fmt.Sprintf("plugins[%d]", i)
		if p.Type == "" {
			return fmt.Errorf("%s: plugin '%s' is missing a type", path, p.Name)
		}
		if _, taken := loaded[p.Name]; taken {
			return fmt.Errorf("%s: duplicate plugin name '%s'", path, p.Name)
		}
		spec, known := gie150Plugins[p.Type]
		if !known {
			return fmt.Errorf("%s: plugin type '%s' is not registered in GIE v1.5.0's EPP%s", path, p.Type, nearest(p.Type, sets.KeySet(gie150Plugins)))
		}
		if err := spec.parameters(parametersOrNil(p.Parameters)); err != nil {
			return fmt.Errorf("%s.parameters: failed to create plugin '%s' (type: %s): %w", path, p.Name, p.Type, err)
		}
		loaded[p.Name] = p.Type
		if p.Type == PrefixCacheScorer {
			prefixScorer, prefixParams = true, parametersOrNil(p.Parameters)
		}
	}
	// The prefix-cache scorer brings the producer that indexes prefixes, made with the (last)
	// scorer's parameters, unless one is declared.
	if prefixScorer && !slices.Contains(mapValues(loaded), ApproxPrefixProducer) {
		if err := gie150Plugins[ApproxPrefixProducer].parameters(prefixParams); err != nil {
			return fmt.Errorf("plugins: the %s that a %s brings, with the scorer's parameters: %w", ApproxPrefixProducer, PrefixCacheScorer, err)
		}
		loaded[ApproxPrefixProducer] = ApproxPrefixProducer
	}
	// defaults.go applySystemDefaults.
	profiles := slices.Clone(cfg.SchedulingProfiles)
	if len(profiles) == 0 {
		var refs []RouterSchedulingPlugin
		for name := range loaded {
			if loaded.is(name, gie150Filter|gie150Scorer|gie150Picker) {
				refs = append(refs, RouterSchedulingPlugin{PluginRef: name})
			}
		}
		profiles = []RouterSchedulingProfile{{Name: "default", Plugins: refs}}
	}
	handlers := 0
	for name := range loaded {
		if loaded.is(name, gie150ProfileHandler) {
			handlers++
		}
	}
	if len(profiles) == 1 && handlers == 0 {
		loaded[SingleProfileHandler], handlers = SingleProfileHandler, 1
	}
	pickers := 0
	for name := range loaded {
		if loaded.is(name, gie150Picker) {
			pickers++
		}
	}
	if pickers == 0 {
		loaded[MaxScorePicker] = MaxScorePicker
	}
	for _, name := range []string{gie150DefaultOrdering, gie150DefaultFairness, gie150DefaultUsageLimit} {
		if _, ok := loaded[name]; !ok {
			loaded[name] = name
		}
	}
	parser := defaultParser
	if cfg.Parser != nil {
		parser = cfg.Parser.PluginRef
	}
	if _, ok := loaded[parser]; !ok {
		loaded[defaultParser] = defaultParser
	}
	detector := defaultSaturationDetector
	if cfg.SaturationDetector != nil && cfg.SaturationDetector.PluginRef != "" {
		detector = cfg.SaturationDetector.PluginRef
	}
	if _, ok := loaded[detector]; !ok && detector == defaultSaturationDetector {
		loaded[detector] = detector
	}
	dataLayer := cfg.DataLayer
	if !gates.Has(gateLegacyMetrics) && dataLayer == nil {
		for _, name := range []string{MetricsDataSource, CoreMetricsExtractor} {
			if _, ok := loaded[name]; !ok {
				loaded[name] = name
			}
		}
		dataLayer = &GIE150DataLayer{Sources: []RouterDataSource{{PluginRef: MetricsDataSource, Extractors: []RouterPluginRef{{PluginRef: CoreMetricsExtractor}}}}}
	}
	// validation.go validateSchedulingProfiles and validateSaturationDetector.
	seen := sets.New[string]()
	for i, profile := range profiles {
		if profile.Name == "" {
			return fmt.Errorf("schedulingProfiles[%d] is missing a name", i)
		}
		if seen.Has(profile.Name) {
			return fmt.Errorf("schedulingProfiles[%d] has duplicate name '%s'", i, profile.Name)
		}
		seen.Insert(profile.Name)
		for j, ref := range profile.Plugins {
			if ref.PluginRef == "" {
				return fmt.Errorf("schedulingProfiles[%d].plugins[%d] is missing a 'pluginRef'", i, j)
			}
			if _, ok := loaded[ref.PluginRef]; !ok {
				return fmt.Errorf("schedulingProfiles[%d].plugins[%d]: profile '%s' references undefined plugin '%s'", i, j, profile.Name, ref.PluginRef)
			}
		}
	}
	if _, ok := loaded[detector]; !ok {
		return fmt.Errorf("saturationDetector: references undefined plugin '%s'", detector)
	}
	// configloader.go buildSchedulerConfig: a profile takes one picker and one of each plugin
	// (SchedulerProfile.AddPlugins); one profile handler, the single one for one profile.
	for i, profile := range profiles {
		if err := checkGIE150Profile(profile, loaded); err != nil {
			return fmt.Errorf("schedulingProfiles[%d]: %w", i, err)
		}
	}
	single := false
	for name, t := range loaded {
		if loaded.is(name, gie150ProfileHandler) {
			single = single || t == SingleProfileHandler
		}
	}
	switch {
	case handlers > 1:
		return errors.New("plugins: multiple profile handlers found; only one is allowed")
	case handlers == 0:
		return errors.New("plugins: no profile handler configured (GIE v1.5.0 has only single-profile-handler, for one profile)")
	case single && len(profiles) > 1:
		return errors.New("plugins: SingleProfileHandler cannot support multiple scheduling profiles")
	}
	// runner.go parseConfigurationPhaseTwo: datalayer/data_graph.go ValidateAndOrderDataDependencies.
	if err := checkGIE150DataDependencies(loaded); err != nil {
		return err
	}
	// buildDataLayerConfig, then the runner's data layer runtime (datalayer/runtime.go Configure).
	if !gates.Has(gateLegacyMetrics) {
		if err := checkGIE150DataLayer(dataLayer, loaded); err != nil {
			return err
		}
	}
	if gates.Has(gateFlowControl) {
		if err := checkGIE150FlowControl(cfg.FlowControl, loaded); err != nil {
			return fmt.Errorf("flowControl: %w", err)
		}
	}
	// buildParserConfig and the saturation detector's type.
	if !loaded.is(parser, gie150Parser) {
		return fmt.Errorf("parser: '%s' is not a parser plugin the configuration defines", parser)
	}
	if !loaded.is(detector, gie150SaturationDetector) {
		return fmt.Errorf("saturationDetector: plugin '%s' is not a saturation detector", detector)
	}
	return nil
}

// checkGIE150Profile: pkg/epp/scheduling/scheduler_profile.go AddPlugins: a profile has one
// picker (the default picker is added to a profile without one); other kinds are ignored.
func checkGIE150Profile(profile RouterSchedulingProfile, loaded gie150Loaded) error {
	pickers := 0
	for _, ref := range profile.Plugins {
		if loaded.is(ref.PluginRef, gie150Picker) {
			pickers++
		}
	}
	if pickers > 1 {
		return fmt.Errorf("profile '%s' has %d pickers; a profile has one", profile.Name, pickers)
	}
	return nil
}

// checkGIE150DataDependencies: datalayer/data_graph.go buildDAG. Of its rules only the data
// comparison can fail with the in-tree plugins (every producer runs in the request-control layer,
// before the consumers, and none consumes what its consumers produce): a key whose data is a
// pointer never matches between two plugins.
func checkGIE150DataDependencies(loaded gie150Loaded) error {
	for producer, producerType := range loaded {
		for consumer, consumerType := range loaded {
			if producer == consumer {
				continue
			}
			for _, key := range gie150Plugins[producerType].produces {
				if pointerDataKeys[key] && slices.Contains(gie150Plugins[consumerType].consumes, key) {
					return fmt.Errorf("plugins: %s (%s) produces %s for %s (%s), which GIE v1.5.0's data layer refuses: "+
						"it compares the two plugins' declared %s data, pointers that never match "+
						"(datalayer/data_graph.go buildDAG: data type mismatch); declare only one of them", producer, producerType, key, consumer, consumerType, key)
				}
			}
		}
	}
	return nil
}

// checkGIE150DataLayer: configloader.go buildDataLayerConfig (each source a data source, each
// extractor an extractor) and datalayer/runtime.go Configure (some source; each extractor one its
// source accepts).
func checkGIE150DataLayer(dl *GIE150DataLayer, loaded gie150Loaded) error {
	if dl == nil || len(dl.Sources) == 0 {
		return errors.New("dataLayer: the data layer is on but has no sources; give one (metrics-data-source with core-metrics-extractor), or remove the section for the default")
	}
	for i, s := range dl.Sources {
		if !loaded.is(s.PluginRef, gie150DataSource) {
			return fmt.Errorf("dataLayer.sources[%d]: '%s' is not a data source plugin the configuration defines", i, s.PluginRef)
		}
		for j, e := range s.Extractors {
			if !loaded.is(e.PluginRef, gie150Extractor) {
				return fmt.Errorf("dataLayer.sources[%d].extractors[%d]: '%s' is not an extractor plugin the configuration defines", i, j, e.PluginRef)
			}
			if source, extractor := loaded[s.PluginRef], loaded[e.PluginRef]; !slices.Contains(gie150Plugins[source].extractors, extractor) {
				return fmt.Errorf("dataLayer.sources[%d].extractors[%d]: extractor %s is incompatible with data source %s", i, j, extractor, source)
			}
		}
	}
	return nil
}

// checkGIE150FlowControl: pkg/epp/flowcontrol config.go NewConfigFromAPI (registry.NewConfigFromAPI,
// controller.NewConfigFromAPI, ensureUsageLimitPolicy).
func checkGIE150FlowControl(fc *GIE150FlowControl, loaded gie150Loaded) error {
	if fc == nil {
		fc = &GIE150FlowControl{}
	}
	nonNegative := func(path string, q *resource.Quantity) error {
		if q != nil && q.Sign() < 0 {
			return fmt.Errorf("%s must be non-negative, got %s", path, q.String())
		}
		return nil
	}
	if err := errors.Join(nonNegative("maxBytes", fc.MaxBytes), nonNegative("maxRequests", fc.MaxRequests)); err != nil {
		return err
	}
	if fc.DefaultRequestTTL != nil && fc.DefaultRequestTTL.Duration < 0 {
		return fmt.Errorf("defaultRequestTTL cannot be negative, but got %v", fc.DefaultRequestTTL.Duration)
	}
	band := func(path string, b GIE150PriorityBand) error {
		if err := errors.Join(nonNegative(path+".maxBytes", b.MaxBytes), nonNegative(path+".maxRequests", b.MaxRequests)); err != nil {
			return err
		}
		if ref := cmpOr(b.OrderingPolicyRef, gie150DefaultOrdering); !loaded.is(ref, gie150OrderingPolicy) {
			return fmt.Errorf("%s.orderingPolicyRef: no ordering policy '%s' among the plugins", path, ref)
		}
		if ref := cmpOr(b.FairnessPolicyRef, gie150DefaultFairness); !loaded.is(ref, gie150FairnessPolicy) {
			return fmt.Errorf("%s.fairnessPolicyRef: no fairness policy '%s' among the plugins", path, ref)
		}
		return nil
	}
	if fc.DefaultPriorityBand != nil {
		if err := band("defaultPriorityBand", *fc.DefaultPriorityBand); err != nil {
			return err
		}
	}
	priorities := sets.New[int]()
	for i, b := range fc.PriorityBands {
		path := fmt.Sprintf("priorityBands[%d]", i)
		if priorities.Has(b.Priority) {
			return fmt.Errorf("%s: duplicate priority level %d", path, b.Priority)
		}
		priorities.Insert(b.Priority)
		if err := band(path, b); err != nil {
			return err
		}
	}
	if ref := cmpOr(fc.UsageLimitPolicyPluginRef, gie150DefaultUsageLimit); !loaded.is(ref, gie150UsageLimitPolicy) {
		return fmt.Errorf("usageLimitPolicyPluginRef: no usage limit policy '%s' among the plugins", ref)
	}
	return nil
}

// parametersOrNil: the loader hands a factory nil for absent parameters (and YAML's null).
func parametersOrNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// nearest names the registered types that share a word with an unknown one.
func nearest(pluginType string, known sets.Set[string]) string {
	var near []string
	for _, name := range sets.List(known) {
		for _, word := range strings.Split(pluginType, "-") {
			if len(word) > 3 && strings.Contains(name, word) {
				near = append(near, name)
				break
			}
		}
	}
	if len(near) == 0 {
		return ""
	}
	return "; did you mean one of: " + strings.Join(near, ", ")
}

// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

// llm-d-router v0.10.0's Endpoint Picker configuration, as the project's own types: the module is
// not on the Go module proxy, so its types and its loader's rules are written here from its source
// (github.com/llm-d/llm-d-router at tag v0.10.0, commit 71f4f0999f95b96c49a9d0c4afbd18dfdb943c26),
// each rule citing the file and function it mirrors. Nothing of it is linked.

// RouterGroupVersion is the configuration's apiVersion (apix/config/v1alpha1/zz_generated.register.go:
// GroupName llm-d.ai, version v1alpha1).
const RouterGroupVersion = "llm-d.ai/v1alpha1"

// routerDeprecatedGroupVersion still loads, with a deprecation notice (pkg/epp/config/loader/
// configloader.go: deprecatedSchemeGroupVersion, LoadRawConfig).
const routerDeprecatedGroupVersion = "inference.networking.x-k8s.io/v1alpha1"

// RouterConfig is llm-d-router v0.10.0's EndpointPickerConfig (apix/config/v1alpha1/
// endpointpickerconfig_types.go), every field the loader's strict codec accepts.
type RouterConfig struct {
	APIVersion         string                    `json:"apiVersion"`
	Kind               string                    `json:"kind"`
	FeatureGates       []string                  `json:"featureGates,omitempty"`
	Plugins            []RouterPlugin            `json:"plugins"`
	SchedulingProfiles []RouterSchedulingProfile `json:"schedulingProfiles"`
	DataLayer          *RouterDataLayer          `json:"dataLayer,omitempty"`
	// FlowControl is decoded strictly (routerflowcontrol.go); of it, the saturation detector
	// reference is checked (its policy references are resolved only with the flowControl gate, and
	// are not checked here).
	FlowControl    *RouterFlowControl    `json:"flowControl,omitempty"`
	RequestHandler *RouterRequestHandler `json:"requestHandler,omitempty"`
	// SaturationDetector and Parser are deprecated at the top level (LoadRawConfig moves them
	// under flowControl and requestHandler, with a notice).
	SaturationDetector *RouterPluginRef `json:"saturationDetector,omitempty"`
	Parser             *RouterPluginRef `json:"parser,omitempty"`
}

// RouterPlugin is a PluginSpec: a plugin's name defaults to its type.
type RouterPlugin struct {
	Name       string          `json:"name,omitempty"`
	Type       string          `json:"type"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// RouterSchedulingProfile is a SchedulingProfile; weights are float64 since the llm-d-router move.
type RouterSchedulingProfile struct {
	Name    string                   `json:"name"`
	Plugins []RouterSchedulingPlugin `json:"plugins"`
}

// RouterSchedulingPlugin is a reference from a profile to a plugin, with a scorer's weight.
type RouterSchedulingPlugin struct {
	PluginRef string   `json:"pluginRef"`
	Weight    *float64 `json:"weight,omitempty"`
}

// RouterPluginRef is the shape of SaturationDetectorConfig, ParserConfig, DiscoveryConfig and
// DataLayerExtractor: one plugin reference.
type RouterPluginRef struct {
	PluginRef string `json:"pluginRef"`
}

// RouterDataLayer is the DataLayerConfig: where the metric names live (the metrics extractor's
// parameters), now that the EPP's metric-name flags are refused.
type RouterDataLayer struct {
	InjectDefaults              *bool              `json:"injectDefaults,omitempty"`
	Sources                     []RouterDataSource `json:"sources,omitempty"`
	Discovery                   *RouterPluginRef   `json:"discovery,omitempty"`
	CrossReplicaSyncerPluginRef string             `json:"crossReplicaSyncerPluginRef,omitempty"`
	CrossReplicaSyncInterval    *metav1.Duration   `json:"crossReplicaSyncInterval,omitempty"`
}

// RouterDataSource is a DataLayerSource: a source plugin and its extractors.
type RouterDataSource struct {
	PluginRef  string            `json:"pluginRef"`
	Extractors []RouterPluginRef `json:"extractors,omitempty"`
}

// RouterRequestHandler is the RequestHandlerConfig.
type RouterRequestHandler struct {
	Parsers []RouterPluginRef `json:"parsers,omitempty"`
}

// ParseRouter decodes a raw configuration as llm-d-router v0.10.0's loader does
// (configloader.go decodeRawConfig: a strict codec of this one kind; then applyStaticDefaults:
// a plugin is named after its type). The deprecated apiVersion and top-level fields load with a
// warning, as LoadRawConfig logs them.
func ParseRouter(raw string) (*RouterConfig, []string, error) {
	cfg := &RouterConfig{}
	if err := yaml.UnmarshalStrict([]byte(raw), cfg); err != nil {
		return nil, nil, fmt.Errorf("the configuration is invalid - %w", err)
	}
	var warnings []string
	switch {
	case cfg.Kind != kindEndpointPickerConfig || (cfg.APIVersion != RouterGroupVersion && cfg.APIVersion != routerDeprecatedGroupVersion):
		return nil, nil, fmt.Errorf("the configuration is invalid - apiVersion %q and kind %q: want %s and %s",
			cfg.APIVersion, cfg.Kind, RouterGroupVersion, kindEndpointPickerConfig)
	case cfg.APIVersion == routerDeprecatedGroupVersion:
		warnings = append(warnings, fmt.Sprintf("apiVersion %s is deprecated: use %s", routerDeprecatedGroupVersion, RouterGroupVersion))
	}
	if cfg.SaturationDetector != nil {
		warnings = append(warnings, "saturationDetector: deprecated at the top level: use flowControl.saturationDetector")
	}
	if cfg.Parser != nil {
		warnings = append(warnings, "parser: deprecated at the top level: use requestHandler.parsers")
	}
	for i := range cfg.Plugins {
		if cfg.Plugins[i].Name == "" {
			cfg.Plugins[i].Name = cfg.Plugins[i].Type
		}
	}
	return cfg, warnings, nil
}

// MarshalRouter renders a configuration for the EPP's ConfigMap.
func MarshalRouter(cfg *RouterConfig) (string, error) {
	out := *cfg
	out.APIVersion, out.Kind = RouterGroupVersion, kindEndpointPickerConfig
	out.Plugins = append([]RouterPlugin(nil), cfg.Plugins...)
	for i := range out.Plugins {
		if out.Plugins[i].Name == out.Plugins[i].Type {
			out.Plugins[i].Name = "" // the loader names it after its type
		}
	}
	data, err := yaml.Marshal(out)
	return string(data), err
}

// routerFeatureGates are the gates llm-d-router v0.10.0's runner registers (cmd/epp/runner/
// runner.go: loader.RegisterFeatureGate); a gate may carry "=true|false" (validation.go
// validateFeatureGates). removedFeatureGates are gone, with what replaced them.
var (
	routerFeatureGates  = sets.New("flowControl", "haPopulateNonLeaderDatastore")
	removedFeatureGates = map[string]string{
		// RELEASE-NOTES.md, PR 1418: the legacy metrics package and its gate are removed.
		"enableLegacyMetrics": "metrics are always collected through the data layer (dataLayer.sources); remove the gate",
		// loader/defaults.go loadDefaultConfig: "Data layer is now enabled by default (no feature gate needed)".
		"dataLayer": "the data layer is always on; remove the gate",
	}
)

// CheckRouter applies to a configuration what llm-d-router v0.10.0's EPP does at start-up
// (pkg/epp/config/loader/configloader.go: LoadRawConfig, then InstantiateAndConfigure), with the
// plugins its runner registers (cmd/epp/runner/runner.go registerInTreePlugins). It returns the
// warnings the EPP logs (deprecated plugins, parameters, apiVersion) and the first refusal, with
// the path of what it refuses.
func CheckRouter(cfg *RouterConfig) ([]string, error) {
	var warnings []string
	for i, gate := range cfg.FeatureGates {
		name, value, hasValue := strings.Cut(gate, "=")
		if fix, removed := removedFeatureGates[name]; removed {
			return nil, fmt.Errorf("featureGates[%d]: %s was removed from llm-d-router: %s", i, name, fix)
		}
		if !routerFeatureGates.Has(name) {
			return nil, fmt.Errorf("featureGates[%d]: feature gate '%s' is unknown or unregistered; llm-d-router v0.10.0 has: %s", i, name, strings.Join(sets.List(routerFeatureGates), ", "))
		}
		if _, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(value))); hasValue && err != nil {
			return nil, fmt.Errorf("featureGates[%d]: %s is not a valid value for the feature gate %s", i, value, name)
		}
	}
	// validation.go validatePlugins: a type, a unique name, a registered type.
	byName := map[string]routerInstance{}
	for i, p := range cfg.Plugins {
		path := fmt.Sprintf("plugins[%d]", i)
		if p.Type == "" {
			return nil, fmt.Errorf("%s: plugin '%s' is missing a type", path, p.Name)
		}
		if _, taken := byName[p.Name]; taken {
			return nil, fmt.Errorf("%s: duplicate plugin name '%s'", path, p.Name)
		}
		spec, known := routerPlugins[p.Type]
		switch {
		case !known && removedRouterPlugins[p.Type] != "":
			return nil, fmt.Errorf("%s: plugin type '%s' was removed from llm-d-router: use %s", path, p.Type, removedRouterPlugins[p.Type])
		case !known:
			return nil, fmt.Errorf("%s: plugin type '%s' is not registered in llm-d-router v0.10.0%s", path, p.Type, didYouMean(p.Type))
		case spec.alpha:
			// registry.go ValidatePluginStability: Alpha plugins need --allow-experimental-plugins.
			return nil, fmt.Errorf("%s: plugin '%s' (type: '%s') has Alpha stability level; the EPP refuses it without --allow-experimental-plugins, which fusioninfer does not set", path, p.Name, p.Type)
		case spec.replacement != "":
			// configloader.go instantiatePlugins: "DEPRECATION warning: plugin is deprecated".
			warnings = append(warnings, fmt.Sprintf("%s: plugin type '%s' is deprecated (removed in %s): use %s", path, p.Type, spec.removedIn, spec.replacement))
		}
		byName[p.Name] = routerInstance{spec.kind, p.Type}
	}
	// configloader.go instantiatePlugins: each factory reads its parameters through
	// fwkplugin.StrictDecoder (unknown fields refused) and checks them.
	for i, p := range cfg.Plugins {
		spec := routerPlugins[p.Type]
		if spec.parameters == nil || len(p.Parameters) == 0 || bytes.Equal(p.Parameters, []byte("null")) {
			continue
		}
		w, err := spec.parameters(p.Parameters, byName)
		if err != nil {
			return nil, fmt.Errorf("plugins[%d].parameters: failed to create plugin '%s' (type: %s): %w", i, p.Name, p.Type, err)
		}
		for _, warning := range w {
			warnings = append(warnings, fmt.Sprintf("plugins[%d].parameters: %s", i, warning))
		}
	}
	// A plugin with dependencies and no parameters still names its default ones (pd-profile-handler's decider).
	for i, p := range cfg.Plugins {
		if spec := routerPlugins[p.Type]; spec.parameters != nil && (len(p.Parameters) == 0 || bytes.Equal(p.Parameters, []byte("null"))) && spec.needsDefaults {
			if _, err := spec.parameters(nil, byName); err != nil {
				return nil, fmt.Errorf("plugins[%d]: failed to create plugin '%s' (type: %s): %w", i, p.Name, p.Type, err)
			}
		}
	}
	if err := checkRouterProfiles(cfg.SchedulingProfiles, byName); err != nil {
		return nil, err
	}
	if err := checkRouterRefs(cfg, byName); err != nil {
		return nil, err
	}
	return warnings, nil
}

// routerInstance is a plugin the loader instantiated.
type routerInstance struct {
	kind       kind
	pluginType string
}

// checkRouterProfiles: loader/defaults.go ensureSchedulingLayer (a default profile of every
// filter, scorer and picker; a single-profile handler for one profile; a max-score picker where a
// profile has none; a scorer's weight defaults to 1), validation.go validateSchedulingProfiles,
// then configloader.go buildSchedulerConfig (one profile handler; the single one for one profile).
func checkRouterProfiles(profiles []RouterSchedulingProfile, byName map[string]routerInstance) error {
	handlers, single := 0, false
	for _, p := range byName {
		if p.kind == profileHandlerKind {
			handlers++
			single = single || p.pluginType == SingleProfileHandler
		}
	}
	count := len(profiles)
	if count == 0 {
		count = 1
	}
	if count == 1 && handlers == 0 {
		handlers, single = 1, true
	}
	seen := sets.New[string]()
	for i, profile := range profiles {
		if profile.Name == "" {
			return fmt.Errorf("schedulingProfiles[%d] is missing a name", i)
		}
		if seen.Has(profile.Name) {
			return fmt.Errorf("schedulingProfiles[%d] has duplicate name '%s'", i, profile.Name)
		}
		seen.Insert(profile.Name)
		pickers := 0
		for j, ref := range profile.Plugins {
			if ref.PluginRef == "" {
				return fmt.Errorf("schedulingProfiles[%d].plugins[%d] is missing a 'pluginRef'", i, j)
			}
			p, defined := byName[ref.PluginRef]
			if !defined {
				return fmt.Errorf("schedulingProfiles[%d].plugins[%d]: schedulingProfiles[%s] references undefined plugin '%s'", i, j, profile.Name, ref.PluginRef)
			}
			if p.kind == pickerKind {
				pickers++
			}
		}
		if pickers > 1 {
			return fmt.Errorf("schedulingProfiles[%d]: profile '%s' has %d pickers; a profile has one", i, profile.Name, pickers)
		}
	}
	switch {
	case handlers > 1:
		return errors.New("plugins: multiple profile handlers found; only one is allowed")
	case handlers == 0:
		return errors.New("plugins: no profile handler configured")
	case single && count > 1:
		return errors.New("plugins: SingleProfileHandler cannot support multiple scheduling profiles")
	}
	return nil
}

// checkRouterRefs: the parsers, the saturation detector and the data layer, as llm-d-router
// v0.10.0 resolves them after instantiating the declared plugins (byName; it registers the defaults
// it adds there too).
//
//   - The deprecated top-level parser and saturationDetector stand in for requestHandler.parsers
//     and flowControl.saturationDetector when those are unset (configloader.go LoadRawConfig).
//   - defaults.go ensureParsers: no parser configured is openai-parser, anthropic-parser and
//     vllmhttp-parser; a parser reference naming no declared plugin is registered as a default
//     plugin of that type (registerDefaultPlugin: named after its type, no parameters), refused
//     only when no such type is registered ("plugin type '%s' not found in registry") or its
//     factory refuses no parameters.
//   - defaults.go ensureSaturationDetector: an unset detector or reference is utilization-detector,
//     registered as a default plugin when not declared; any other reference must be declared
//     (validation.go validateSaturationDetector: "saturation detector references undefined plugin").
//   - configloader.go buildDataLayerConfig: a source and an extractor are declared plugins (the
//     "not a fwkdl.DataSource" assertion holds for any plugin); the datalayer runtime's Configure
//     then refuses a source of no source variant (registerSource).
//   - configloader.go buildParserRegistry ("the plugin %q is not a parser plugin") and
//     InstantiateAndConfigure ("plugin '%s' is not a fwkfc.SaturationDetector"): each reference
//     names a plugin of its kind.
func checkRouterRefs(cfg *RouterConfig, byName map[string]routerInstance) error {
	ref := func(path, name string) error {
		if _, ok := byName[name]; !ok {
			return fmt.Errorf("%s: references undefined plugin '%s'", path, name)
		}
		return nil
	}
	// registerDefault is defaults.go registerDefaultPlugin: the type, instantiated without parameters.
	registerDefault := func(path, pluginType string) error {
		spec, known := routerPlugins[pluginType]
		if !known {
			return fmt.Errorf("%s: plugin type '%s' not found in registry%s", path, pluginType, didYouMean(pluginType))
		}
		if spec.parameters != nil && spec.needsDefaults {
			if _, err := spec.parameters(nil, byName); err != nil {
				return fmt.Errorf("%s: failed to instantiate default plugin '%s': %w", path, pluginType, err)
			}
		}
		byName[pluginType] = routerInstance{spec.kind, pluginType}
		return nil
	}

	// The parsers: requestHandler.parsers, else the top-level parser, else the defaults.
	type parserRef struct{ path, name string }
	var parsers []parserRef
	if cfg.RequestHandler != nil {
		for i, p := range cfg.RequestHandler.Parsers {
			parsers = append(parsers, parserRef{fmt.Sprintf("requestHandler.parsers[%d]", i), p.PluginRef})
		}
	}
	if len(parsers) == 0 && cfg.Parser != nil {
		parsers = []parserRef{{"parser", cfg.Parser.PluginRef}}
	}
	if len(parsers) == 0 {
		for _, name := range routerDefaultParsers {
			parsers = append(parsers, parserRef{"requestHandler.parsers", name})
		}
	}
	for _, p := range parsers {
		if _, declared := byName[p.name]; !declared {
			if err := registerDefault(p.path, p.name); err != nil {
				return err
			}
		}
	}

	// The saturation detector: flowControl.saturationDetector, else the top-level one.
	var detector *RouterPluginRef
	if cfg.FlowControl != nil {
		detector = cfg.FlowControl.SaturationDetector
	}
	detectorPath := "flowControl.saturationDetector"
	if detector == nil && cfg.SaturationDetector != nil {
		detectorPath, detector = "saturationDetector", cfg.SaturationDetector
	}
	detectorName := routerDefaultSaturationDetector
	if detector != nil && detector.PluginRef != "" {
		detectorName = detector.PluginRef
	}
	if _, declared := byName[detectorName]; !declared {
		if detectorName != routerDefaultSaturationDetector {
			return fmt.Errorf("%s: saturation detector references undefined plugin '%s'", detectorPath, detectorName)
		}
		if err := registerDefault(detectorPath, detectorName); err != nil {
			return err
		}
	}

	if dl := cfg.DataLayer; dl != nil {
		for i, s := range dl.Sources {
			if err := ref(fmt.Sprintf("dataLayer.sources[%d]", i), s.PluginRef); err != nil {
				return err
			}
			for j, e := range s.Extractors {
				if err := ref(fmt.Sprintf("dataLayer.sources[%d].extractors[%d]", i, j), e.PluginRef); err != nil {
					return err
				}
			}
		}
	}

	for _, p := range parsers {
		if byName[p.name].kind != parserKind {
			return fmt.Errorf("%s: the plugin %q is not a parser plugin", p.path, p.name)
		}
	}
	if byName[detectorName].kind != saturationDetectorKind {
		return fmt.Errorf("%s: plugin '%s' is not a fwkfc.SaturationDetector", detectorPath, detectorName)
	}
	// runner.go: dlRuntime.Configure, then pkg/epp/datalayer/runtime.go registerSource: a source is
	// a PollingDispatcher, NotificationSource or EndpointSource (fwkdl.DataSource itself is any plugin).
	if dl := cfg.DataLayer; dl != nil {
		for i, s := range dl.Sources {
			if p := byName[s.PluginRef]; p.kind != dataSourceKind {
				return fmt.Errorf("dataLayer.sources[%d]: failed to configure datalayer: skipping unknown datasource plugin type %s/%s", i, s.PluginRef, p.pluginType)
			}
		}
	}
	return nil
}

// didYouMean names the registered types closest to an unknown one (same words).
func didYouMean(pluginType string) string {
	var near []string
	for name := range routerPlugins {
		for _, word := range strings.Split(pluginType, "-") {
			if len(word) > 3 && strings.Contains(name, word) && !routerPlugins[name].alpha {
				near = append(near, name)
				break
			}
		}
	}
	if len(near) == 0 {
		return ""
	}
	sort.Strings(near)
	return "; did you mean one of: " + strings.Join(near, ", ")
}

// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"fmt"
	"strings"

	configapi "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
)

// Selection is the Endpoint Picker a router runs: its configuration, the flavor whose plugins
// the configuration may use, and the image that runs it.
type Selection struct {
	// Release is the EPP generation the router targets (the router's endpointPicker.release).
	Release Release
	// Config is the configuration of the GIE v1.2.0 release's flavors; Router that of llm-d-router;
	// GIE150 that of GIE v1.5.0; none for lwepp, which reads none.
	Config *configapi.EndpointPickerConfig
	Router *RouterConfig
	GIE150 *GIE150Config
	Flavor Flavor
	Image  string
	// Warnings are what the EPP logs as deprecated in the configuration; it still loads.
	Warnings []string
	// custom is true when the configuration is the user's, not a preset.
	custom bool
}

// Fields of a router that a selection error is about.
const (
	FieldStrategy             = "strategy"
	FieldEndpointPickerConfig = "endpointPickerConfig"
	FieldImage                = "endpointPicker.image"
	FieldRelease              = "endpointPicker.release"
)

// SelectError says which router field is wrong.
type SelectError struct {
	// Field is FieldStrategy, FieldEndpointPickerConfig, FieldImage or FieldRelease.
	Field string
	Err   error
}

func (e *SelectError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *SelectError) Unwrap() error { return e.Err }

// Select chooses a router's Endpoint Picker. The configuration is the user's raw one when given
// (it overrides the strategy's preset), else the strategy's preset. A prefill/decode service
// routes with pd-disaggregation, and only such a service may. The flavor is the image's when the
// image is one of the two known repositories; otherwise llm-d's scheduler when the service is
// prefill/decode or the configuration names a plugin only llm-d has, else the reference EPP.
// Select does not load the configuration; Check does. That is the GIE v1.2.0 release's choice;
// llm-d-router v0.10.0 (the default release) is one EPP for every strategy (selectRouter), GIE
// v1.5.0 one for every single-profile strategy (selectGIE150), lwepp one without any (selectLWEPP).
func Select(strategy, raw string, disaggregated bool, release Release, image string) (*Selection, *SelectError) {
	if err := checkStrategy(strategy, disaggregated); err != nil {
		return nil, &SelectError{Field: FieldStrategy, Err: err}
	}
	if strategy == StrategyPrecisePrefixCache && release != "" && release.Known() && !release.IndexesKVEvents() {
		return nil, &SelectError{Field: FieldStrategy, Err: fmt.Errorf("the Endpoint Picker of %s has no %s (cmd/epp/runner/runner.go registers none; "+
			"only llm-d-router's does): use endpointPicker.release %s, or strategy %s, which guesses from where requests were sent",
			release, PrecisePrefixProducer, ReleaseRouter, StrategyPrefixCache)}
	}
	switch release {
	case "", ReleaseRouter:
		return selectRouter(strategy, raw, disaggregated, image)
	case ReleaseGIE150:
		return selectGIE150(strategy, raw, disaggregated, image)
	case ReleaseLWEPP:
		return selectLWEPP(strategy, raw, disaggregated, image)
	case ReleaseGIE:
	default:
		return nil, &SelectError{Field: FieldRelease, Err: fmt.Errorf("unknown release %q: one of %s", release, releaseNames())}
	}
	sel := &Selection{Release: ReleaseGIE, Image: image}
	if raw != "" {
		cfg, err := Parse(raw)
		if err != nil {
			return nil, &SelectError{Field: FieldEndpointPickerConfig, Err: err}
		}
		sel.Config, sel.custom = cfg, true
		sel.Flavor = FlavorGIE
		if disaggregated || needsLLMD(cfg) {
			sel.Flavor = FlavorLLMD
		}
	} else {
		cfg, flavor, err := Preset(strategy, disaggregated)
		if err != nil {
			return nil, &SelectError{Field: FieldStrategy, Err: err}
		}
		sel.Config, sel.Flavor = cfg, flavor
	}
	if image == "" {
		sel.Image = sel.Flavor.DefaultImage()
	} else if flavor, known := imageFlavor(image); known && (flavor == FlavorGIE || flavor == FlavorLLMD) {
		sel.Flavor = flavor
	} else if known {
		return nil, checkImage(ReleaseGIE, image, FlavorGIE, ImageGIE)
	}
	return sel, nil
}

// Custom reports whether the configuration is the user's (endpointPickerConfig), not a preset.
func (s *Selection) Custom() bool { return s.custom }

// Check loads the selection's configuration with its flavor's plugins. A preset that does not
// load means the image is of the wrong flavor (a prefill/decode service on the reference EPP).
func (s *Selection) Check() *SelectError {
	switch s.Flavor {
	case FlavorLWEPP:
		return nil
	case FlavorGIE150:
		if err := CheckGIE150(s.GIE150); err != nil {
			if s.custom {
				return &SelectError{Field: FieldEndpointPickerConfig, Err: err}
			}
			return &SelectError{Field: FieldStrategy, Err: fmt.Errorf("the preset does not load in GIE v1.5.0: %w", err)}
		}
		return nil
	}
	if s.Flavor == FlavorRouter {
		warnings, err := CheckRouter(s.Router)
		if err != nil {
			if s.custom {
				return &SelectError{Field: FieldEndpointPickerConfig, Err: err}
			}
			return &SelectError{Field: FieldStrategy, Err: fmt.Errorf("the preset does not load in llm-d-router v0.10.0: %w", err)}
		}
		s.Warnings = append(s.Warnings, warnings...)
		return nil
	}
	if err := Check(s.Config, s.Flavor); err != nil {
		if s.custom {
			return &SelectError{Field: FieldEndpointPickerConfig, Err: err}
		}
		return &SelectError{Field: FieldImage, Err: fmt.Errorf("%s is %s; this router's %w", s.Image, s.Flavor, err)}
	}
	return nil
}

func checkStrategy(strategy string, disaggregated bool) error {
	switch {
	case strategy == StrategyDefault:
		return nil
	case !knownStrategy(strategy):
		return unknownStrategy(strategy)
	case disaggregated && strategy != StrategyPDDisaggregation && strategy != StrategyPrecisePrefixCache:
		return fmt.Errorf("a service with prefillers and decoders routes with %s (a prefill pod, then a decode pod); "+
			"remove the strategy or set it to %s (or %s, the same on the servers' KV-cache events)", StrategyPDDisaggregation, StrategyPDDisaggregation, StrategyPrecisePrefixCache)
	case !disaggregated && strategy == StrategyPDDisaggregation:
		return fmt.Errorf("%s needs prefiller and decoder roles; this service's are workers", StrategyPDDisaggregation)
	}
	return nil
}

func knownStrategy(strategy string) bool {
	_, single := singleProfile[strategy]
	return single || strategy == StrategyPDDisaggregation || strategy == StrategyPrecisePrefixCache
}

// needsLLMD reports whether the configuration names a plugin the reference EPP does not have.
func needsLLMD(cfg *configapi.EndpointPickerConfig) bool {
	for _, p := range cfg.Plugins {
		if _, ok := gie[p.Type]; !ok {
			return true
		}
	}
	return false
}

// imageFlavor recognises the two flavors' repositories, whatever the registry mirror, tag or digest.
func imageFlavor(image string) (Flavor, bool) {
	repository, _, _ := strings.Cut(image, "@")
	if slash := strings.LastIndex(repository, "/"); strings.LastIndex(repository, ":") > slash {
		repository = repository[:strings.LastIndex(repository, ":")]
	}
	switch {
	case strings.HasSuffix(repository, "/llm-d-router-endpoint-picker"):
		return FlavorRouter, true
	case strings.HasSuffix(repository, "/gateway-api-inference-extension/lwepp"):
		return FlavorLWEPP, true
	case strings.HasSuffix(repository, "/llm-d-inference-scheduler"):
		return FlavorLLMD, true
	case strings.HasSuffix(repository, "/gateway-api-inference-extension/epp"):
		return FlavorGIE, true
	}
	return "", false
}

// Text is the configuration as the EPP's ConfigMap holds it; empty for lwepp, which reads none.
func (s *Selection) Text() (string, error) {
	switch s.Flavor {
	case FlavorRouter:
		return MarshalRouter(s.Router)
	case FlavorGIE150:
		return MarshalGIE150(s.GIE150)
	case FlavorLWEPP:
		return "", nil
	}
	return Marshal(s.Config)
}

// checkImage refuses an image of another known repository than the release's own: the release
// names the EPP, the image only where it is pulled from; an image of an unknown repository is
// taken to be a build of the release's.
func checkImage(release Release, image string, own Flavor, ownImage string) *SelectError {
	if flavor, known := imageFlavor(image); known && flavor != own {
		return &SelectError{Field: FieldImage, Err: fmt.Errorf("%s is %s's image; endpointPicker.release is %s: set the release to %s or use an image of %s",
			image, flavor, release, strings.Join(releasesOfImages[flavor], " or "), ownImage[:strings.LastIndex(ownImage, ":")])}
	}
	return nil
}

// releasesOfImages are the releases whose images are of a known repository.
var releasesOfImages = map[Flavor][]string{
	FlavorRouter: {string(ReleaseRouter)},
	FlavorGIE:    {string(ReleaseGIE150), string(ReleaseGIE)},
	FlavorLLMD:   {string(ReleaseGIE)},
	FlavorLWEPP:  {string(ReleaseLWEPP)},
}

// selectGIE150: GIE v1.5.0's reference EPP runs every single-profile strategy; it has no
// prefill/decode plugins.
func selectGIE150(strategy, raw string, disaggregated bool, image string) (*Selection, *SelectError) {
	if disaggregated {
		return nil, &SelectError{Field: FieldRelease, Err: fmt.Errorf("GIE v1.5.0's Endpoint Picker has no prefill/decode plugins "+
			"(cmd/epp/runner/runner.go registers none): route a service with prefillers and decoders with endpointPicker.release %s (the default) or %s",
			ReleaseRouter, ReleaseGIE)}
	}
	sel := &Selection{Release: ReleaseGIE150, Flavor: FlavorGIE150, Image: cmpOr(image, ImageGIE150)}
	if image != "" {
		if err := checkImage(ReleaseGIE150, image, FlavorGIE, ImageGIE150); err != nil {
			return nil, err
		}
	}
	if raw != "" {
		cfg, warnings, err := ParseGIE150(raw)
		if err != nil {
			return nil, &SelectError{Field: FieldEndpointPickerConfig, Err: err}
		}
		sel.GIE150, sel.Warnings, sel.custom = cfg, warnings, true
		return sel, nil
	}
	cfg, err := GIE150Preset(strategy)
	if err != nil {
		return nil, &SelectError{Field: FieldStrategy, Err: err}
	}
	sel.GIE150 = cfg
	return sel, nil
}

// selectLWEPP: GIE v1.6.0's lightweight EPP picks round-robin among the pool's ready pods and reads
// no configuration (cmd/lwepp/main.go), so no strategy or configuration applies to it, and it
// cannot route prefill/decode.
func selectLWEPP(strategy, raw string, disaggregated bool, image string) (*Selection, *SelectError) {
	switch {
	case disaggregated:
		return nil, &SelectError{Field: FieldRelease, Err: fmt.Errorf("GIE's lightweight Endpoint Picker picks round-robin and cannot route prefill/decode: "+
			"route a service with prefillers and decoders with endpointPicker.release %s (the default) or %s", ReleaseRouter, ReleaseGIE)}
	case strategy != StrategyDefault:
		return nil, &SelectError{Field: FieldStrategy, Err: fmt.Errorf("endpointPicker.release %s picks endpoints round-robin and reads no configuration: "+
			"remove the strategy, or choose a release with scorers (%s, %s)", ReleaseLWEPP, ReleaseRouter, ReleaseGIE150)}
	case raw != "":
		return nil, &SelectError{Field: FieldEndpointPickerConfig, Err: fmt.Errorf("endpointPicker.release %s reads no configuration (cmd/lwepp has no --config-file): "+
			"remove it, or choose a release that reads one (%s, %s)", ReleaseLWEPP, ReleaseRouter, ReleaseGIE150)}
	}
	sel := &Selection{Release: ReleaseLWEPP, Flavor: FlavorLWEPP, Image: cmpOr(image, ImageLWEPP)}
	if image != "" {
		if err := checkImage(ReleaseLWEPP, image, FlavorLWEPP, ImageLWEPP); err != nil {
			return nil, err
		}
	}
	return sel, nil
}

// selectRouter: llm-d-router v0.10.0 runs every strategy and prefill/decode in one image; an
// image of another known repository is refused (the release names the EPP, the image only where
// it is pulled from), an image of an unknown repository is taken to be a build of it.
func selectRouter(strategy, raw string, disaggregated bool, image string) (*Selection, *SelectError) {
	sel := &Selection{Release: ReleaseRouter, Flavor: FlavorRouter, Image: image}
	if image == "" {
		sel.Image = ImageRouter
	} else if err := checkImage(ReleaseRouter, image, FlavorRouter, ImageRouter); err != nil {
		return nil, err
	}
	if raw != "" {
		cfg, warnings, err := ParseRouter(raw)
		if err != nil {
			return nil, &SelectError{Field: FieldEndpointPickerConfig, Err: err}
		}
		sel.Router, sel.Warnings, sel.custom = cfg, warnings, true
		return sel, nil
	}
	cfg, err := RouterPreset(strategy, disaggregated)
	if err != nil {
		return nil, &SelectError{Field: FieldStrategy, Err: err}
	}
	sel.Router = cfg
	return sel, nil
}

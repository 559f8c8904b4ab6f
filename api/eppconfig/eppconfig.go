// SPDX-License-Identifier: Apache-2.0

// Package eppconfig holds the Endpoint Picker (EPP) configurations a router role deploys, for
// the release its spec names (releases.go: llm-d-router v0.10.0 by default, GIE v1.5.0, GIE v1.2.0
// and GIE's lightweight lwepp, which reads none): presets for the routing strategies, strict
// parsing of a user's raw configuration, and a check that applies the rules of the release's
// loader and of the factories of its plugins, so that an accepted configuration is one the EPP
// accepts at start-up.
//
// The check does not link the EPPs (their plugins bring grpc, controller-runtime and Prometheus:
// about 500 packages, and more than half of the CLI's size). The tests run the EPPs' own loaders
// beside it where the module proxy serves them (GIE v1.2.0 linked in loader_test.go; GIE v1.5.0 as
// a program of its own module, oracle/gie-v1.5.0) over corpora of configurations and require the
// same verdict on each (docs/design/0017-a-light-cli.md, 0020-router-releases.md).
package eppconfig

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configapi "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// Flavor is an EPP implementation: which plugins a configuration may name depends on it.
type Flavor string

const (
	// FlavorGIE is the reference EPP of gateway-api-inference-extension v1.2.0.
	FlavorGIE Flavor = "gateway-api-inference-extension"
	// FlavorLLMD is llm-d's inference scheduler v0.4.0 (built on GIE v1.2.0), which adds the
	// prefill/decode plugins and links GIE's own.
	FlavorLLMD Flavor = "llm-d-inference-scheduler"
	// FlavorRouter is llm-d-router v0.10.0's Endpoint Picker: GIE's EPP moved to llm-d with
	// llm-d's plugins (GIE v1.6.0's README), the default.
	FlavorRouter Flavor = "llm-d-router"
	// FlavorGIE150 is GIE v1.5.0's reference EPP.
	FlavorGIE150 Flavor = "gateway-api-inference-extension v1.5.0"
	// FlavorLWEPP is GIE v1.6.0's lightweight, round-robin EPP.
	FlavorLWEPP Flavor = "gateway-api-inference-extension lwepp"
)

// Images of each flavor, at the versions whose plugins this package registers.
const (
	ImageGIE  = "registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0"
	ImageLLMD = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.4.0"
	// ImageRoutingSidecar is llm-d's prefill/decode routing sidecar of the same release: it runs
	// beside every decode server and fetches the prompt's KV cache from the prefill pod the EPP chose.
	ImageRoutingSidecar = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.4.0"
	// ImageRouter and ImageDisaggSidecar are llm-d-router v0.10.0's images (its Makefile:
	// EPP_IMAGE_NAME, SIDECAR_IMAGE_NAME); the sidecar replaced the routing sidecar.
	ImageRouter        = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
	ImageDisaggSidecar = "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"
)

// DefaultImage is the image of a flavor.
func (f Flavor) DefaultImage() string {
	switch f {
	case FlavorLLMD:
		return ImageLLMD
	case FlavorRouter:
		return ImageRouter
	}
	return ImageGIE
}

const kindEndpointPickerConfig = "EndpointPickerConfig"

// Parse decodes a raw EndpointPickerConfig strictly (no unknown or repeated field, this API
// version and kind) and sets the defaults of the EPP's loader (LoadConfigPhaseOne: a strict codec
// of this one kind, then setDefaultsPhaseOne), so the ConfigMap says what the EPP will run.
func Parse(raw string) (*configapi.EndpointPickerConfig, error) {
	cfg := &configapi.EndpointPickerConfig{}
	if err := yaml.UnmarshalStrict([]byte(raw), cfg); err != nil {
		return nil, fmt.Errorf("the configuration is invalid - %w", err)
	}
	if cfg.APIVersion != configapi.GroupVersion.String() || cfg.Kind != kindEndpointPickerConfig {
		return nil, fmt.Errorf("the configuration is invalid - apiVersion %q and kind %q: want %s and %s",
			cfg.APIVersion, cfg.Kind, configapi.GroupVersion, kindEndpointPickerConfig)
	}
	if err := checkFeatureGates(cfg.FeatureGates); err != nil {
		return nil, err
	}
	setDefaults(cfg)
	return cfg, nil
}

// The saturation detector's defaults (pkg/epp/saturationdetector of GIE v1.2.0).
const (
	defaultQueueDepthThreshold       = 5
	defaultKVCacheUtilThreshold      = 0.8
	defaultMetricsStalenessThreshold = 200 * time.Millisecond
)

// setDefaults: a plugin is named after its type unless named, and the saturation detector's
// thresholds default (the loader's setDefaultsPhaseOne).
func setDefaults(cfg *configapi.EndpointPickerConfig) {
	for i := range cfg.Plugins {
		if cfg.Plugins[i].Name == "" {
			cfg.Plugins[i].Name = cfg.Plugins[i].Type
		}
	}
	if cfg.SaturationDetector == nil {
		cfg.SaturationDetector = &configapi.SaturationDetector{}
	}
	sd := cfg.SaturationDetector
	if sd.QueueDepthThreshold == 0 {
		sd.QueueDepthThreshold = defaultQueueDepthThreshold
	}
	if sd.KVCacheUtilThreshold == 0 {
		sd.KVCacheUtilThreshold = defaultKVCacheUtilThreshold
	}
	if sd.MetricsStalenessThreshold.Duration == 0 {
		sd.MetricsStalenessThreshold = metav1.Duration{Duration: defaultMetricsStalenessThreshold}
	}
}

// Marshal renders a configuration for the EPP's ConfigMap, without the empty names, null
// parameters and null weights the upstream type writes (the loader defaults them).
func Marshal(cfg *configapi.EndpointPickerConfig) (string, error) {
	out := cfg.DeepCopy()
	out.APIVersion, out.Kind = configapi.GroupVersion.String(), kindEndpointPickerConfig
	data, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	data, err = yaml.Marshal(pruneUnset(doc))
	return string(data), err
}

// pruneUnset drops null values and empty strings from maps, recursively.
func pruneUnset(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if child == nil || child == "" {
				delete(t, k)
				continue
			}
			t[k] = pruneUnset(child)
		}
	case []any:
		for i := range t {
			t[i] = pruneUnset(t[i])
		}
	}
	return v
}

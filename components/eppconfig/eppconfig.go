// Package eppconfig holds the Endpoint Picker (EPP) configurations a router role deploys:
// presets for the routing strategies, strict parsing of a user's raw configuration, and a check
// that loads a configuration with the EPP's own loader and the plugins of the EPP flavor that
// will run it, so that an accepted configuration is one the EPP accepts at start-up.
//
// The router role (issue 3) builds on it; nothing else imports it yet.
package eppconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"
	configapi "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/config/loader"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/plugins"
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
)

// Images of each flavor, at the versions whose plugins this package registers.
const (
	ImageGIE  = "registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0"
	ImageLLMD = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.4.0"
	// ImageRoutingSidecar is llm-d's prefill/decode routing sidecar of the same release: it runs
	// beside every decode server and fetches the prompt's KV cache from the prefill pod the EPP chose.
	ImageRoutingSidecar = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.4.0"
)

// DefaultImage is the image of a flavor.
func (f Flavor) DefaultImage() string {
	if f == FlavorLLMD {
		return ImageLLMD
	}
	return ImageGIE
}

// Parse decodes a raw EndpointPickerConfig strictly, as the EPP's loader does.
func Parse(raw string) (*configapi.EndpointPickerConfig, error) {
	cfg, _, err := loader.LoadConfigPhaseOne([]byte(raw), logr.Discard())
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// Marshal renders a configuration for the EPP's ConfigMap, without the empty names, null
// parameters and null weights the upstream type writes (the loader defaults them).
func Marshal(cfg *configapi.EndpointPickerConfig) (string, error) {
	out := cfg.DeepCopy()
	out.APIVersion, out.Kind = configapi.GroupVersion.String(), "EndpointPickerConfig"
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

// Check loads a configuration the way the EPP of the flavor does at start-up: every plugin type
// must exist in that flavor, every plugin must instantiate with its parameters, and every
// scheduling profile must be complete. The error says which plugin or profile is wrong.
func Check(cfg *configapi.EndpointPickerConfig, flavor Flavor) error {
	known, instantiable := pluginTypes(flavor)
	if known == nil {
		return fmt.Errorf("unknown EPP flavor %q", flavor)
	}
	var unknown []string
	verifiable := true
	for _, p := range cfg.Plugins {
		switch {
		case !known.Has(p.Type):
			unknown = append(unknown, fmt.Sprintf("%s (%s)", p.Type, p.Name))
		case !instantiable.Has(p.Type):
			verifiable = false
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("plugin types not in %s (%s): %s; it has: %s", flavor, flavor.DefaultImage(), strings.Join(unknown, ", "), strings.Join(sortedList(known), ", "))
	}
	if !verifiable {
		// llm-d's scorers link libzmq and CPython through cgo; their names are checked, their
		// parameters are left to the EPP.
		return nil
	}
	raw, err := Marshal(cfg)
	if err != nil {
		return err
	}
	loaded, _, err := loader.LoadConfigPhaseOne([]byte(raw), logr.Discard())
	if err != nil {
		return err
	}
	// Some plugins start background work on the handle's context (the prefix-cache scorer's
	// inactive-pod sweep, which would crash on this handle's missing datastore): end it with the check.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = loader.LoadConfigPhaseTwo(loaded, plugins.NewEppHandle(ctx, nil), logr.Discard())
	return err
}

func sortedList(s sets.Set[string]) []string {
	out := s.UnsortedList()
	sort.Strings(out)
	return out
}

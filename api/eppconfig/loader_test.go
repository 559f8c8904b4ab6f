// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/filter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/config/loader"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/plugins"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/epploader"
)

// epp loads a configuration as the flavor's EPP does at start-up (epploader.GIE120), the oracle
// of Check.
func epp(raw string, flavor Flavor) error { return epploader.GIE120(raw, flavor == FlavorLLMD) }

// TestPluginsAreTheEPPs: each plugin type is the constant of its package, in the flavor whose
// runner registers it, and of the kind its factory makes.
func TestPluginsAreTheEPPs(t *testing.T) {
	for flavor, factories := range map[Flavor]map[string]plugins.FactoryFunc{FlavorGIE: epploader.GIEFactories, FlavorLLMD: epploader.LLMDFactories} {
		ours := map[Flavor]map[string]pluginSpec{FlavorGIE: gie, FlavorLLMD: llmd}[flavor]
		require.Len(t, ours, len(factories), flavor)
		for name, factory := range factories {
			spec, ok := ours[name]
			require.True(t, ok, "%s has plugin %s", flavor, name)
			params := map[string]json.RawMessage{filter.ByLabelType: json.RawMessage(`{"label":"a","allowsNoLabel":true}`)}[name]
			ctx, cancel := context.WithCancel(context.Background())
			plugin, err := factory(name, params, plugins.NewEppHandle(ctx, nil))
			cancel()
			require.NoError(t, err, name)
			var k kind
			switch plugin.(type) {
			case framework.ProfileHandler:
				k = profileHandlerKind
			case framework.Picker:
				k = pickerKind
			case framework.Scorer:
				k = scorerKind
			case framework.Filter:
				k = filterKind
			default:
				k = otherKind
			}
			assert.Equal(t, k, spec.kind, name)
		}
	}
}

// TestCheckGivesTheEPPsVerdict: on thousands of generated configurations (every plugin with good
// and bad parameters, profiles complete, incomplete and contradictory), Check accepts exactly
// those the EPP's own loader loads.
func TestCheckGivesTheEPPsVerdict(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	accepted, refused, reasons := 0, 0, map[string]int{}
	for i := 0; i < 3000; i++ {
		flavor := []Flavor{FlavorGIE, FlavorLLMD}[rng.Intn(2)]
		raw, noProfiles := generateConfig(rng, flavor)
		want := epp(raw, flavor)
		if noProfiles {
			// Without profiles the loader orders the plugins by map iteration, and crashes in at
			// least 1 order of 8 (Go's small maps iterate a rotation from a random slot of 8) when
			// one fails: refused if any of 200 loads fails.
			for run := 0; run < 200 && want == nil; run++ {
				want = epp(raw, flavor)
			}
		}
		cfg, got := Parse(raw)
		if got == nil {
			got = Check(cfg, flavor)
		}
		if (want == nil) != (got == nil) {
			t.Fatalf("%s, configuration:\n%s\nthe EPP: %v\nCheck: %v", flavor, raw, want, got)
		}
		if want == nil {
			accepted++
			loaded, _, err := loader.LoadConfigPhaseOne([]byte(raw), logr.Discard())
			require.NoError(t, err)
			loaded.FeatureGates = cfg.FeatureGates // the loader writes an empty list for none
			require.Equal(t, loaded, cfg, "Parse sets the loader's phase-one defaults:\n%s", raw)
		} else {
			refused++
			reasons[firstWords(got.Error())]++
		}
	}
	t.Logf("%d accepted, %d refused: %v", accepted, refused, reasons)
	assert.Greater(t, accepted, 500, "the corpus holds many valid configurations")
	assert.Greater(t, refused, 500, "and many invalid ones")
}

// parameterVariants are parameters to try for each plugin type: valid ones, wrong types, and
// values the factory refuses.
var parameterVariants = map[string][]string{
	PrefixCacheScorer:          {`{"blockSize": 32, "maxPrefixBlocksToMatch": 512}`, `{"blockSize": "big"}`, `{"autoTune": 1}`, `{"lruCapacityPerServer": -1}`},
	MaxScorePicker:             {`{"maxNumOfEndpoints": 2}`, `{"maxNumOfEndpoints": "two"}`},
	RandomPicker:               {`{"maxNumOfEndpoints": 1}`, `{"maxNumOfEndpoints": 1.5}`},
	WeightedRandomPicker:       {`{"maxNumOfEndpoints": 3}`, `[1]`},
	ByLabelFilter:              {`{"label": "tier", "validValues": ["gold"]}`, `{"label": "tier", "allowsNoLabel": true}`, `{"label": "tier"}`, `{"validValues": ["a"]}`, `{"label": 3}`},
	ByLabelSelectorFilter:      {`{"matchLabels": {"a": "b"}}`, `{"matchExpressions": [{"key": "a", "operator": "Bad"}]}`, `{"matchLabels": {"a": "b b"}}`, `{"matchExpressions": [{"key": "a", "operator": "In"}]}`},
	PrefillHeaderHandler:       {`{"prefillProfile": "prefill"}`, `{"prefillProfile": 1}`},
	DataParallelProfileHandler: {`{"primaryPort": 8000}`, `{"primaryPort": 70000}`, `{"primaryPort": -1}`, `{"primaryPort": "x"}`},
	PDProfileHandler:           {`{"threshold": 0}`, `{"threshold": -1}`, `{"hashBlockSize": 0}`, `{"hashBlockSize": 16, "primaryPort": 9000}`, `{"primaryPort": 65536}`},
}

// generateConfig writes a random configuration for a flavor, and whether it has no profiles.
func generateConfig(rng *rand.Rand, flavor Flavor) (string, bool) {
	specs, _ := pluginsOf(flavor)
	var types []string
	for name := range specs {
		types = append(types, name)
	}
	sort.Strings(types)
	doc := map[string]any{"apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "EndpointPickerConfig"}
	switch rng.Intn(60) {
	case 0:
		doc["kind"] = "EndpointPicker"
	case 1:
		doc["featureGates"] = []string{"dataLayer"}
	case 2:
		doc["featureGates"] = []string{"fastPath"}
	case 3:
		doc["pluginz"] = []any{}
	}
	var declared []map[string]any
	var names []string
	for n := rng.Intn(5) + 1; n > 0; n-- {
		p := map[string]any{"type": types[rng.Intn(len(types))]}
		switch rng.Intn(100) {
		case 0:
			p["type"] = "round-robin-picker"
		case 1:
			delete(p, "type")
			p["name"] = "nameless"
		case 2:
			p["type"] = ""
		}
		typ, _ := p["type"].(string)
		if rng.Intn(3) == 0 {
			p["name"] = fmt.Sprintf("%s-%d", typ, rng.Intn(2))
		}
		if variants := parameterVariants[typ]; len(variants) > 0 && rng.Intn(3) > 0 {
			variant := variants[0] // a valid one, most often
			if rng.Intn(3) == 0 {
				variant = variants[rng.Intn(len(variants))]
			}
			p["parameters"] = json.RawMessage(variant)
		} else if rng.Intn(8) == 0 {
			p["parameters"] = json.RawMessage([]string{`{}`, `null`, `{"unknown": true}`}[rng.Intn(3)])
		}
		declared = append(declared, p)
		name, _ := p["name"].(string)
		if name == "" {
			name = typ
		}
		names = append(names, name)
	}
	doc["plugins"] = declared
	profileCount := []int{0, 1, 1, 1, 2, 2, 3}[rng.Intn(7)]
	if profileCount == 0 {
		return marshalYAML(doc), true
	}
	refs := append(append([]string{}, names...), MaxScorePicker, SingleProfileHandler, "undeclared", "")
	var profiles []map[string]any
	for i := 0; i < profileCount; i++ {
		profile := map[string]any{"name": []string{"default", "prefill", "decode", "p" + fmt.Sprint(i), "p" + fmt.Sprint(i), ""}[rng.Intn(6)]}
		if i > 0 && rng.Intn(2) == 0 {
			profile["name"] = fmt.Sprintf("profile-%d", i)
		}
		var plugins []map[string]any
		for n := rng.Intn(4); n > 0; n-- {
			ref := map[string]any{"pluginRef": names[rng.Intn(len(names))]}
			if rng.Intn(20) == 0 {
				ref["pluginRef"] = refs[rng.Intn(len(refs))]
			}
			if rng.Intn(2) == 0 {
				ref["weight"] = rng.Intn(5)
			}
			plugins = append(plugins, ref)
		}
		profile["plugins"] = plugins
		profiles = append(profiles, profile)
	}
	doc["schedulingProfiles"] = profiles
	return marshalYAML(doc), false
}

func marshalYAML(doc map[string]any) string {
	data, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func firstWords(s string) string {
	words := strings.Fields(s)
	return strings.Join(words[:min(6, len(words))], " ")
}

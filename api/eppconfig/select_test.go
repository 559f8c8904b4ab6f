// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const llmdOnlyConfig = `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: by-label
  parameters: {label: tier, validValues: [gold]}
- type: queue-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: by-label
  - pluginRef: queue-scorer
`

// TestSelect: the GIE v1.2.0 release keeps its choice of flavor by plugins and image.
func TestSelect(t *testing.T) {
	cases := []struct {
		name          string
		strategy, raw string
		disaggregated bool
		image         string
		wantFlavor    Flavor
		wantImage     string
		wantField     string // a Select or Check error on this field
		wantErr       string
	}{
		{name: "default mix on the reference EPP", wantFlavor: FlavorGIE, wantImage: ImageGIE},
		{name: "a strategy", strategy: StrategyQueueSize, wantFlavor: FlavorGIE, wantImage: ImageGIE},
		{name: "prefill/decode on llm-d", disaggregated: true, wantFlavor: FlavorLLMD, wantImage: ImageLLMD},
		{name: "prefill/decode, strategy named", strategy: StrategyPDDisaggregation, disaggregated: true, wantFlavor: FlavorLLMD, wantImage: ImageLLMD},
		{name: "a mirrored image keeps its flavor", image: "mirror.example.com/gateway-api-inference-extension/epp:v1.2.0", wantFlavor: FlavorGIE,
			wantImage: "mirror.example.com/gateway-api-inference-extension/epp:v1.2.0"},
		{name: "an image of unknown repository runs the inferred flavor", disaggregated: true, image: "registry.example.com/my-epp@sha256:abc",
			wantFlavor: FlavorLLMD, wantImage: "registry.example.com/my-epp@sha256:abc"},
		{name: "a raw config naming an llm-d plugin runs on llm-d", raw: llmdOnlyConfig, wantFlavor: FlavorLLMD, wantImage: ImageLLMD},
		{name: "a raw config naming an llm-d plugin on the reference image", raw: llmdOnlyConfig, image: ImageGIE,
			wantField: FieldEndpointPickerConfig, wantErr: "plugin types not in gateway-api-inference-extension"},
		{name: "prefill/decode on the reference image", disaggregated: true, image: "registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0",
			wantField: FieldImage, wantErr: "registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0 is gateway-api-inference-extension"},
		{name: "unknown strategy", strategy: "round-robin", wantField: FieldStrategy, wantErr: `unknown strategy "round-robin"`},
		{name: "a single-profile strategy on prefill/decode", strategy: StrategyPrefixCache, disaggregated: true,
			wantField: FieldStrategy, wantErr: "routes with pd-disaggregation"},
		{name: "pd-disaggregation on workers", strategy: StrategyPDDisaggregation, wantField: FieldStrategy, wantErr: "needs prefiller and decoder roles"},
		{name: "raw config that does not parse", raw: "plugins: [", wantField: FieldEndpointPickerConfig, wantErr: "yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select(tc.strategy, tc.raw, tc.disaggregated, ReleaseGIE, tc.image)
			if err == nil {
				err = sel.Check()
			}
			if tc.wantField != "" {
				require.NotNil(t, err)
				assert.Equal(t, tc.wantField, err.Field)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tc.wantFlavor, sel.Flavor)
			assert.Equal(t, tc.wantImage, sel.Image)
		})
	}
}

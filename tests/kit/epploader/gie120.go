// SPDX-License-Identifier: Apache-2.0

// Package epploader loads an Endpoint Picker configuration with the Endpoint Picker's own start-up
// code, not the project's model of it (api/eppconfig): GIE v1.2.0's loader, linked here, and GIE
// v1.5.0's, a program of its own module (Oracle). The tests that hold api/eppconfig to the
// releases and the feature-space invariants (tests/kit/featurespace) ask it, so that a bug of
// api/eppconfig cannot hide in the checks of what the render emits.
package epploader

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/filter"
	prerequest "github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/pre-request"
	llmdprofile "github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/profile"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/config/loader"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/datalayer"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/flowcontrol"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/plugins"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/multi/prefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/picker"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/profile"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/scorer"
)

// The plugins each GIE v1.2.0 flavor's runner registers: GIE v1.2.0 cmd/epp/runner
// registerInTreePlugins, less the two for conformance tests; llm-d v0.4.0 pkg/plugins
// RegisterAllPlugins, less the cgo scorers.
var (
	GIEFactories = map[string]plugins.FactoryFunc{
		prefix.PrefixCachePluginType:        prefix.PrefixCachePluginFactory,
		picker.MaxScorePickerType:           picker.MaxScorePickerFactory,
		picker.RandomPickerType:             picker.RandomPickerFactory,
		picker.WeightedRandomPickerType:     picker.WeightedRandomPickerFactory,
		profile.SingleProfileHandlerType:    profile.SingleProfileHandlerFactory,
		scorer.KvCacheUtilizationScorerType: scorer.KvCacheUtilizationScorerFactory,
		scorer.QueueScorerType:              scorer.QueueScorerFactory,
		scorer.LoraAffinityScorerType:       scorer.LoraAffinityScorerFactory,
	}
	LLMDFactories = map[string]plugins.FactoryFunc{
		filter.ByLabelType:                         filter.ByLabelFactory,
		filter.ByLabelSelectorType:                 filter.ByLabelSelectorFactory,
		filter.DecodeRoleType:                      filter.DecodeRoleFactory,
		filter.PrefillRoleType:                     filter.PrefillRoleFactory,
		prerequest.PrefillHeaderHandlerType:        prerequest.PrefillHeaderHandlerFactory,
		llmdprofile.DataParallelProfileHandlerType: llmdprofile.DataParallelProfileHandlerFactory,
		llmdprofile.PdProfileHandlerType:           llmdprofile.PdProfileHandlerFactory,
	}
	registerOnce sync.Once
)

// GIE120 loads a configuration as GIE v1.2.0's EPP does at start-up (llm-d's v0.4.0 EPP, built on
// it, with llmd): its loader's two phases with the flavor's plugins; a panic of the loader is a
// refusal (the EPP would crash).
func GIE120(raw string, llmd bool) (err error) {
	registerOnce.Do(func() {
		for _, factories := range []map[string]plugins.FactoryFunc{GIEFactories, LLMDFactories} {
			for name, factory := range factories {
				plugins.Register(name, factory)
			}
		}
		loader.RegisterFeatureGate(datalayer.FeatureGate)
		loader.RegisterFeatureGate(flowcontrol.FeatureGate)
	})
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the EPP crashes: %v", r)
		}
	}()
	cfg, _, err := loader.LoadConfigPhaseOne([]byte(raw), logr.Discard())
	if err != nil {
		return err
	}
	flavor := "GIE v1.2.0"
	if llmd {
		flavor = "llm-d v0.4.0"
	}
	for _, p := range cfg.Plugins {
		_, inGIE := GIEFactories[p.Type]
		_, inLLMD := LLMDFactories[p.Type]
		if !inGIE && (!llmd || !inLLMD) {
			return fmt.Errorf("plugin type %s is not in %s", p.Type, flavor)
		}
	}
	// The prefix-cache scorer starts a sweep on the handle's context: end it with the load.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = loader.LoadConfigPhaseTwo(cfg, plugins.NewEppHandle(ctx, nil), logr.Discard())
	return err
}

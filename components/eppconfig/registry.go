package eppconfig

import (
	"sync"

	"github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/filter"
	prerequest "github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/pre-request"
	llmdprofile "github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/profile"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/plugins"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/multi/prefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/picker"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/profile"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling/framework/plugins/scorer"
)

// gieFactories are the plugins the GIE v1.2.0 EPP registers (cmd/epp/runner registerInTreePlugins,
// less the two registered for conformance tests only).
var gieFactories = map[string]plugins.FactoryFunc{
	prefix.PrefixCachePluginType:        prefix.PrefixCachePluginFactory,
	picker.MaxScorePickerType:           picker.MaxScorePickerFactory,
	picker.RandomPickerType:             picker.RandomPickerFactory,
	picker.WeightedRandomPickerType:     picker.WeightedRandomPickerFactory,
	profile.SingleProfileHandlerType:    profile.SingleProfileHandlerFactory,
	scorer.KvCacheUtilizationScorerType: scorer.KvCacheUtilizationScorerFactory,
	scorer.QueueScorerType:              scorer.QueueScorerFactory,
	scorer.LoraAffinityScorerType:       scorer.LoraAffinityScorerFactory,
}

// llmdFactories are llm-d v0.4.0's plugins (pkg/plugins RegisterAllPlugins) that build without cgo.
var llmdFactories = map[string]plugins.FactoryFunc{
	filter.ByLabelType:                         filter.ByLabelFactory,
	filter.ByLabelSelectorType:                 filter.ByLabelSelectorFactory,
	filter.DecodeRoleType:                      filter.DecodeRoleFactory,
	filter.PrefillRoleType:                     filter.PrefillRoleFactory,
	prerequest.PrefillHeaderHandlerType:        prerequest.PrefillHeaderHandlerFactory,
	llmdprofile.DataParallelProfileHandlerType: llmdprofile.DataParallelProfileHandlerFactory,
	llmdprofile.PdProfileHandlerType:           llmdprofile.PdProfileHandlerFactory,
}

// llmdCgoScorers are llm-d v0.4.0's scorers whose package links libzmq and CPython (cgo): the
// image has them, this process cannot instantiate them.
var llmdCgoScorers = []string{
	"precise-prefix-cache-scorer", "load-aware-scorer", "session-affinity-scorer", "active-request-scorer", "no-hit-lru-scorer",
}

var registerOnce sync.Once

// pluginTypes are the plugin types a flavor knows, and those this process can instantiate.
func pluginTypes(flavor Flavor) (known, instantiable sets.Set[string]) {
	registerOnce.Do(func() {
		for _, factories := range []map[string]plugins.FactoryFunc{gieFactories, llmdFactories} {
			for name, factory := range factories {
				plugins.Register(name, factory)
			}
		}
	})
	gie := sets.New[string]()
	for name := range gieFactories {
		gie.Insert(name)
	}
	switch flavor {
	case FlavorGIE:
		return gie, gie
	case FlavorLLMD:
		instantiable = gie.Clone()
		for name := range llmdFactories {
			instantiable.Insert(name)
		}
		return instantiable.Clone().Insert(llmdCgoScorers...), instantiable
	}
	return nil, nil
}

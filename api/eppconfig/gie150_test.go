// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

// The release GIE v1.5.0, held to its own EPP: the oracle runs v1.5.0's loader, plugin factories
// and flag set (oracle/gie-v1.5.0/main.go).

// TestGIE150PluginsAreTheEPPs: the plugin types are exactly the ones v1.5.0's runner registers,
// each of the kinds its factory makes, each data source with the extractors its data layer takes.
func TestGIE150PluginsAreTheEPPs(t *testing.T) {
	types := startOracle(t, "gie-v1.5.0").ask(t, oracleRequest{Describe: true}).Types
	require.ElementsMatch(t, sets.List(sets.KeySet(types)), sets.List(sets.KeySet(gie150Plugins)))
	for name, d := range types {
		require.Empty(t, d.Err, name)
		assert.Equal(t, d.Kinds, gie150KindList(gie150Plugins[name].kinds), "kinds of %s", name)
		assert.Equal(t, d.Extractors, gie150Plugins[name].extractors, "extractors under %s", name)
		assert.Equal(t, d.Produces, gie150Plugins[name].produces, "data %s produces", name)
		assert.Equal(t, d.Consumes, gie150Plugins[name].consumes, "data %s consumes", name)
	}
}

// TestGIE150ArgsAreTheEPPs: the Endpoint Picker's command line the router renders for the release
// (without leader election, and electing a leader) is one GIE v1.5.0's EPP starts with; a metric-name
// flag, which it refuses, is refused by it too (the oracle is not blind to flags).
func TestGIE150ArgsAreTheEPPs(t *testing.T) {
	o := startOracle(t, "gie-v1.5.0")
	for _, elect := range []bool{false, true} {
		args := ReleaseGIE150.Args(Flags{PoolName: "p-pool", PoolNamespace: "ns", PoolGroup: GroupInferenceV1,
			ConfigFile: "/config/config.yaml", GRPCPort: 9002, GRPCHealthPort: 9003, MetricsPort: 9090, LeaderElection: elect})
		assert.Empty(t, o.ask(t, oracleRequest{Args: args}).ArgsErr, "%v", args)
		assert.Equal(t, elect, slices.Contains(args, FlagLeaderElection))
	}
	refused := o.ask(t, oracleRequest{Args: []string{"--pool-name", "p", "--kv-cache-usage-percentage-metric", "vllm:kv_cache_usage_perc"}})
	assert.Contains(t, refused.ArgsErr, "kv-cache-usage-percentage-metric")
	for _, flag := range releases[ReleaseGIE150].flags {
		v := o.ask(t, oracleRequest{Args: []string{"--pool-name", "p", "--" + flag + "=" + flagValue(flag)}})
		if slices.Contains(releases[ReleaseGIE150].refused, flag) {
			assert.NotEmpty(t, v.ArgsErr, "--%s is refused", flag)
		} else {
			assert.NotContains(t, v.ArgsErr, "unknown flag", "--%s exists", flag)
		}
	}
	assert.Contains(t, o.ask(t, oracleRequest{Args: []string{"--pool-name", "p", "--allow-experimental-plugins"}}).ArgsErr, "unknown flag",
		"a flag of llm-d-router's, not of GIE v1.5.0's")
}

// flagValue is a value each of the EPPs' flags takes.
func flagValue(flag string) string {
	switch {
	case strings.HasSuffix(flag, "-port") || flag == "v":
		return "9000"
	case strings.HasSuffix(flag, "-interval") || strings.HasSuffix(flag, "-threshold"):
		return "1s"
	case slices.Contains([]string{"ha-enable-leader-election", "disable-endpoint-subset-filter", "tracing", "health-checking",
		"enable-pprof", "enable-cert-reload", "secure-serving", "metrics-endpoint-auth", "zap-devel", "model-server-metrics-https-insecure-skip-verify"}, flag):
		return "false"
	case flag == "endpoint-target-ports":
		return "8000"
	case flag == "zap-encoder":
		return "json"
	case flag == "zap-log-level" || flag == "zap-stacktrace-level":
		return "info"
	case flag == "zap-time-encoding":
		return "rfc3339"
	case flag == "model-server-metrics-scheme":
		return "http"
	case flag == "endpoint-selector":
		return "" // one of pool-name and endpoint-selector
	}
	return "x"
}

// TestGIE150PresetsAndExamplesLoad: every strategy's preset, and the configuration of every example
// on this release, load in GIE v1.5.0's EPP, as the ConfigMap holds them.
func TestGIE150PresetsAndExamplesLoad(t *testing.T) {
	o := startOracle(t, "gie-v1.5.0")
	for _, strategy := range append(Strategies(), StrategyDefault) {
		if strategy == StrategyPDDisaggregation || strategy == StrategyPrecisePrefixCache {
			continue
		}
		sel, selErr := Select(strategy, "", false, ReleaseGIE150, "")
		require.Nil(t, selErr)
		require.Nil(t, sel.Check(), strategy)
		text, err := sel.Text()
		require.NoError(t, err)
		assert.Empty(t, o.ask(t, oracleRequest{Config: text}).ConfigErr, "strategy %q:\n%s", strategy, text)
	}
	examples, err := filepath.Glob("../../examples/manifests/*.yaml")
	require.NoError(t, err)
	found := 0
	for _, file := range examples {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		if !strings.Contains(string(data), "release: "+string(ReleaseGIE150)) {
			continue
		}
		var manifest struct {
			Spec struct {
				Roles []struct {
					EndpointPickerConfig string `json:"endpointPickerConfig"`
				} `json:"roles"`
			} `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal(data, &manifest))
		for _, role := range manifest.Spec.Roles {
			if role.EndpointPickerConfig == "" {
				continue
			}
			found++
			cfg, _, err := ParseGIE150(role.EndpointPickerConfig)
			require.NoError(t, err, file)
			require.NoError(t, CheckGIE150(cfg), file)
			text, err := MarshalGIE150(cfg)
			require.NoError(t, err)
			assert.Empty(t, o.ask(t, oracleRequest{Config: text}).ConfigErr, file)
		}
	}
	assert.NotZero(t, found, "an example configures GIE v1.5.0's EPP")
}

// TestCheckGIE150GivesTheEPPsVerdict: on thousands of generated configurations (every registered
// plugin with good and bad parameters; profiles, data layer, flow control, parser and saturation
// detector complete, incomplete and contradictory), CheckGIE150 accepts exactly those GIE v1.5.0's
// own loader loads, and the loader holds the plugins the check says it adds.
func TestCheckGIE150GivesTheEPPsVerdict(t *testing.T) {
	o := startOracle(t, "gie-v1.5.0")
	rng := rand.New(rand.NewSource(150))
	accepted, refused, reasons := 0, 0, map[string]int{}
	for i := 0; i < 3000; i++ {
		raw := generateGIE150Config(rng)
		want := o.ask(t, oracleRequest{Config: raw}).ConfigErr
		cfg, _, got := ParseGIE150(raw)
		if got == nil {
			got = CheckGIE150(cfg)
		}
		if (want == "") != (got == nil) {
			t.Fatalf("configuration %d:\n%s\nthe EPP: %q\nCheckGIE150: %v", i, raw, want, got)
		}
		if got == nil {
			accepted++
			// The ConfigMap's text loads as the user's did.
			text, err := MarshalGIE150(cfg)
			require.NoError(t, err)
			assert.Empty(t, o.ask(t, oracleRequest{Config: text}).ConfigErr, "the rendered text of:\n%s", raw)
		} else {
			refused++
			reasons[reason(got.Error())]++
		}
	}
	t.Logf("%d accepted, %d refused: %v", accepted, refused, reasons)
	assert.Greater(t, accepted, 800, "the corpus holds many valid configurations")
	assert.Greater(t, refused, 800, "and many invalid ones")
}

// gie150ParameterVariants are parameters to try for each plugin type of GIE v1.5.0: valid ones
// first, then wrong types and values its factory refuses.
var gie150ParameterVariants = map[string][]string{
	PrefixCacheScorer:              {`{"blockSizeTokens": 32, "maxPrefixBlocksToMatch": 128}`, `{"autoTune": false, "blockSizeTokens": 0}`, `{"blockSize": 64}`, `{"maxPrefixTokensToMatch": -1}`, `{"blockSizeTokens": "16"}`, `{"unknownParameter": 1}`},
	ApproxPrefixProducer:           {`{"lruCapacityPerServer": 1000}`, `{"autoTune": false, "blockSizeTokens": -2}`, `{"blockSize": 8, "blockSizeTokens": 0}`, `{"autoTune": "yes"}`},
	MaxScorePicker:                 {`{"maxNumOfEndpoints": 2}`, `{"maxNumOfEndpoints": -1}`, `{"maxNumOfEndpoints": "two"}`},
	RandomPicker:                   {`{"maxNumOfEndpoints": 1}`, `{"maxNumOfEndpoints": 1.5}`},
	WeightedRandomPicker:           {`{"maxNumOfEndpoints": 3}`, `[1]`},
	"token-load-scorer":            {`{"queueThresholdTokens": 1000}`, `{"queueThresholdTokens": -5}`, `{"queueThresholdTokens": "many"}`},
	"static-usage-limit-policy":    {`{"threshold": 0.5}`, `{"threshold": "half"}`},
	"predicted-latency-scorer":     {`{"samplingMean": 100, "epsilonExploreNeg": 0.1}`, `{"samplingMean": -1}`, `{"affinityGateTau": 2}`, `{"headroomTTFTWeight": -0.5}`, `{"contextTTL": "5m"}`},
	"predicted-latency-producer":   {`{"samplingMean": 10, "streamingMode": true}`, `{"sloBufferFactor": -1}`, `{"maxDecodeTokenSamplesForPrediction": -3}`, `{"endpointRoleLabel": 7}`},
	"latency-slo-admitter":         {`{}`, `{"anything": 1}`, `"on"`},
	"prefix-cache-affinity-filter": {`{"affinityThreshold": 0.9}`, `{"affinityThreshold": 1.5}`, `{"explorationProbability": -0.1}`, `{"maxTTFTPenaltyMs": -1}`},
	"slo-headroom-tier-filter":     {`{"epsilonExploreNeg": 0.2}`, `{"epsilonExploreNeg": 1.2}`},
	"latency-scorer":               {`{"ttftWeight": 0.5, "headroomSelectionStrategy": "most"}`, `{"ttftWeight": "high"}`},
	MetricsDataSource:              {`{"scheme": "https", "path": "/metrics", "insecureSkipVerify": true}`, `{"scheme": "grpc"}`, `{"path": 1}`},
	CoreMetricsExtractor: {
		`{"engineConfigs": [{"name": "custom", "queuedRequestsSpec": "custom_waiting", "kvUsageSpec": "custom_kv{tier=gold}"}], "defaultEngine": "custom"}`,
		`{"defaultEngine": "sglang"}`, `{"defaultEngine": "tgi"}`, `{"engineConfigs": [{"name": ""}]}`, `{"engineConfigs": [{"name": "default"}]}`,
		`{"engineConfigs": [{"name": "a", "queuedRequestsSpec": "rate(x[5m])"}]}`, `{"engineConfigs": [{"name": "a", "kvUsageSpec": "{tier=gold}"}]}`,
		`{"engineConfigs": [{"name": "a"}, {"name": "a"}]}`, `{"engineConfigs": [{"name": "a", "loraSpec": "lora{"}]}`,
	},
	"k8s-notification-source":    {`{"group": "", "version": "v1", "kind": "ConfigMap"}`, `{"version": "v1"}`, `{"kind": 3}`},
	"request-attribute-reporter": {`{"attributes": [{"key": {"name": "tokens"}, "expression": "usage.total_tokens"}]}`, `{"attributes": []}`, `{"attributes": [{"key": {}, "expression": "1"}]}`, `{"attributes": [{"key": {"name": "n"}}]}`},
	"concurrency-detector":       {`{"maxConcurrency": 50, "concurrencyMode": "tokens"}`, `{"maxConcurrency": 0}`, `{"concurrencyMode": "bytes"}`, `{"headroom": -1}`, `{"maxTokenConcurrency": -1}`},
	"utilization-detector":       {`{"queueDepthThreshold": 10, "kvCacheUtilThreshold": 0.9, "metricsStalenessThreshold": "500ms"}`, `{"queueDepthThreshold": 0}`, `{"kvCacheUtilThreshold": 1.5}`, `{"metricsStalenessThreshold": "-1s"}`, `{"headroom": -0.1}`},
}

// generateGIE150Config writes a random configuration for GIE v1.5.0's EPP.
func generateGIE150Config(rng *rand.Rand) string {
	var types []string
	for name := range gie150Plugins {
		types = append(types, name)
	}
	sort.Strings(types)
	// Most plugins are the common ones, so that many configurations are complete.
	common := []string{QueueScorer, KVCacheUtilizationScorer, PrefixCacheScorer, MaxScorePicker, RandomPicker, "token-load-scorer", "inflight-load-producer"}
	pick := func(from []string) string { return from[rng.Intn(len(from))] }
	doc := map[string]any{"apiVersion": GIE150GroupVersion, "kind": "EndpointPickerConfig"}
	switch rng.Intn(80) {
	case 0:
		doc["apiVersion"] = RouterGroupVersion
	case 1:
		doc["kind"] = "EndpointPicker"
	case 2:
		doc["pluginz"] = []any{}
	case 3:
		doc["requestHandler"] = map[string]any{} // llm-d-router's, not v1.5.0's
	}
	gates := []string{}
	for _, gate := range []string{"dataLayer", "flowControl", "enableLegacyMetrics"} {
		if rng.Intn(6) == 0 {
			gates = append(gates, gate)
		}
	}
	if rng.Intn(40) == 0 {
		gates = append(gates, "fastPath")
	}
	if len(gates) > 0 {
		doc["featureGates"] = gates
	}
	var declared []map[string]any
	var names []string
	for n := rng.Intn(6) + 1; n > 0; n-- {
		typ := pick(common)
		if rng.Intn(3) == 0 {
			typ = pick(types)
		}
		p := map[string]any{"type": typ}
		switch rng.Intn(100) {
		case 0:
			p["type"] = "round-robin-picker"
		case 1:
			p["type"] = "decode-filter" // llm-d's
		case 2:
			p["type"] = ""
		}
		typ, _ = p["type"].(string)
		if rng.Intn(4) == 0 || (slices.Contains(names, typ) && rng.Intn(4) > 0) {
			p["name"] = fmt.Sprintf("%s-%d", typ, len(names)+rng.Intn(2))
		}
		if variants := gie150ParameterVariants[typ]; len(variants) > 0 && (rng.Intn(3) > 0 || typ == "k8s-notification-source" || typ == "request-attribute-reporter") {
			variant := variants[0]
			if rng.Intn(3) == 0 {
				variant = pick(variants)
			}
			p["parameters"] = json.RawMessage(variant)
		} else if rng.Intn(10) == 0 {
			p["parameters"] = json.RawMessage(pick([]string{`{}`, `null`, `{"unknown": true}`, `[]`}))
		}
		declared = append(declared, p)
		name, _ := p["name"].(string)
		names = append(names, cmpOr(name, typ))
	}
	doc["plugins"] = declared
	refs := append(slices.Clone(names), MaxScorePicker, SingleProfileHandler, "undeclared", "")
	ref := func() string {
		if rng.Intn(12) == 0 {
			return pick(refs)
		}
		return pick(names)
	}
	if profiles := []int{0, 0, 1, 1, 1, 1, 1, 2}[rng.Intn(8)]; profiles > 0 {
		var list []map[string]any
		for i := 0; i < profiles; i++ {
			profile := map[string]any{"name": pick([]string{"default", "p" + fmt.Sprint(i), "p" + fmt.Sprint(i), "prefill", ""})}
			if rng.Intn(3) > 0 {
				profile["name"] = "p" + fmt.Sprint(i)
			}
			var plugins []map[string]any
			for n := rng.Intn(4); n > 0; n-- {
				entry := map[string]any{"pluginRef": ref()}
				if rng.Intn(2) == 0 {
					entry["weight"] = rng.Intn(5)
				}
				plugins = append(plugins, entry)
			}
			profile["plugins"] = plugins
			list = append(list, profile)
		}
		doc["schedulingProfiles"] = list
	}
	switch rng.Intn(10) {
	case 0:
		doc["parser"] = map[string]any{"pluginRef": pick([]string{"openai-parser", "passthrough-parser", "undeclared", ref()})}
	case 1:
		doc["saturationDetector"] = map[string]any{"pluginRef": pick([]string{"utilization-detector", "concurrency-detector", "", ref()})}
	}
	switch rng.Intn(12) {
	case 0:
		doc["dataLayer"] = map[string]any{"sources": []any{}}
	case 1:
		doc["dataLayer"] = map[string]any{"sources": []any{map[string]any{"pluginRef": ref(), "extractors": []any{map[string]any{"pluginRef": ref()}}}}}
	case 2:
		doc["dataLayer"] = map[string]any{"sources": []any{map[string]any{"pluginRef": MetricsDataSource, "extractors": []any{map[string]any{"pluginRef": CoreMetricsExtractor}}}}}
	}
	if rng.Intn(8) == 0 {
		band := func(priority int) map[string]any {
			b := map[string]any{"priority": priority}
			switch rng.Intn(5) {
			case 0:
				b["orderingPolicyRef"] = pick([]string{"edf-ordering-policy", ref()})
			case 1:
				b["fairnessPolicyRef"] = pick([]string{"round-robin-fairness-policy", ref()})
			case 2:
				b["maxRequests"] = pick([]string{"10", "-1"})
			}
			return b
		}
		fc := map[string]any{"priorityBands": []any{band(0), band(rng.Intn(2))}}
		switch rng.Intn(5) {
		case 0:
			fc["maxBytes"] = pick([]string{"1Gi", "-1"})
		case 1:
			fc["defaultRequestTTL"] = pick([]string{"30s", "-5s"})
		case 2:
			fc["usageLimitPolicyPluginRef"] = pick([]string{"static-usage-limit-policy", ref()})
		case 3:
			fc["defaultPriorityBand"] = band(9)
		}
		doc["flowControl"] = fc
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// reason is an error without its names and numbers, to count refusals by kind.
func reason(err string) string {
	err = regexp.MustCompile(`'[^']*'|"[^"]*"|\[\d+\]|-?\d+(\.\d+)?`).ReplaceAllString(err, "*")
	return firstWords(err)
}

// TestCheckGIE150Messages: what GIE v1.5.0's EPP refuses is refused with its path in the
// configuration and, where there is one, the way out.
func TestCheckGIE150Messages(t *testing.T) {
	const header = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\n"
	cases := []struct{ name, raw, want string }{
		{"llm-d-router's apiVersion", "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\n",
			`apiVersion "llm-d.ai/v1alpha1" and kind "EndpointPickerConfig": want inference.networking.x-k8s.io/v1alpha1`},
		{"llm-d-router's request handler", header + "requestHandler: {}\n", `unknown field "requestHandler"`},
		{"a plugin of llm-d's", header + "plugins: [{type: queue-scorer}, {type: prefill-filter}]\n",
			"plugins[1]: plugin type 'prefill-filter' is not registered in GIE v1.5.0's EPP"},
		{"a bad parameter", header + "plugins: [{type: utilization-detector, parameters: {kvCacheUtilThreshold: 2}}]\n",
			"plugins[0].parameters: failed to create plugin 'utilization-detector' (type: utilization-detector): invalid utilization detector configuration: kvCacheUtilThreshold must be in (0.0, 1.0]"},
		{"the prefix scorer's parameters go to its producer", header + "plugins: [{type: prefix-cache-scorer, parameters: {blockSize: 64, blockSizeTokens: 0}}]\n",
			"the approx-prefix-cache-producer that a prefix-cache-scorer brings, with the scorer's parameters: invalid configuration: BlockSize (64) is deprecated; please use BlockSizeTokens"},
		{"two profiles", header + "plugins: [{type: queue-scorer}]\nschedulingProfiles: [{name: a}, {name: b}]\n", "no profile handler configured"},
		{"the in-flight load pair", header + "plugins: [{type: inflight-load-producer}, {type: token-load-scorer}]\n",
			"produces InFlightLoadKey for token-load-scorer (token-load-scorer), which GIE v1.5.0's data layer refuses"},
		{"an empty data layer", header + "plugins: [{type: queue-scorer}]\ndataLayer: {sources: []}\n", "dataLayer: the data layer is on but has no sources"},
		{"a data source that is not one", header + "plugins: [{type: queue-scorer}]\ndataLayer: {sources: [{pluginRef: queue-scorer}]}\n",
			"dataLayer.sources[0]: 'queue-scorer' is not a data source"},
		{"an undefined saturation detector", header + "plugins: [{type: queue-scorer}]\nsaturationDetector: {pluginRef: concurrency-detector}\n",
			"saturationDetector: references undefined plugin 'concurrency-detector'"},
		{"two pickers in a profile", header + "plugins: [{type: max-score-picker}, {type: random-picker}]\nschedulingProfiles: [{name: a, plugins: [{pluginRef: max-score-picker}, {pluginRef: random-picker}]}]\n",
			"schedulingProfiles[0]: profile 'a' has 2 pickers"},
		{"an unknown feature gate", header + "featureGates: [flowControll]\n", "featureGates[0]: feature gate 'flowControll' is unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, selErr := Select("", tc.raw, false, ReleaseGIE150, "")
			var err error
			if selErr != nil {
				err = selErr
			} else if checkErr := sel.Check(); checkErr != nil {
				err = checkErr
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	sel, selErr := Select("", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nfeatureGates: [dataLayer]\n", false, ReleaseGIE150, "")
	require.Nil(t, selErr)
	require.Nil(t, sel.Check())
	assert.Equal(t, []string{"featureGates: dataLayer: the data layer is on by default in GIE v1.5.0; remove the gate"}, sel.Warnings)
}

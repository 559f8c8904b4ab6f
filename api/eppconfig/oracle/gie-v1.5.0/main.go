// SPDX-License-Identifier: Apache-2.0

// Command oracle is GIE v1.5.0's Endpoint Picker, as far as its start-up goes: for each request on
// stdin (a JSON line: a configuration and the EPP's command-line arguments) it parses the
// arguments with the EPP's own flag set (pkg/epp/server options: AddFlags, Complete, Validate)
// and loads the configuration through the EPP's own loader with the plugins its runner registers
// (cmd/epp/runner/runner.go: parseConfigurationPhaseOne, parseConfigurationPhaseTwo,
// configureAndStartDatalayer's Configure), and writes the verdict as a JSON line on stdout.
// api/eppconfig's tests hold eppconfig.CheckGIE150 and the rendered Deployment's flags to
// it. It is a module of its own: the project's module pins GIE v1.2.0, whose loader is the oracle
// of that release.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/config/loader"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/datalayer"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/flowcontrol"
	fwkdl "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/datalayer"
	fwkfc "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/flowcontrol"
	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"
	fwkrq "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/requestcontrol"
	fwkrh "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/requesthandling"
	framework "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"
	extractormetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/extractor/metrics"
	sourcemetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/source/metrics"
	sourcenotifications "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/source/notifications"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/fairness"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/ordering"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/saturationdetector/concurrency"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/saturationdetector/utilization"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/usagelimits"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/admitter/latencyslo"
	reqdataprodprefix "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/requestattributereporter"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/requestdataproducer/inflightload"
	latencyproducer "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/requestdataproducer/predictedlatency"
	testresponsereceived "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/test/responsereceived"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requesthandling/parsers/openai"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requesthandling/parsers/passthrough"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requesthandling/parsers/vllmgrpc"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/filter/prefixcacheaffinity"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/filter/sloheadroomtier"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/picker"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/profile"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/kvcacheutilization"
	latencyscorer "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/latency"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/loraaffinity"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/predictedlatency"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/prefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/queuedepth"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/runningrequests"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/tokenload"
	testfilter "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/test/filter"
	runserver "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/server"
)

// request is one question: the EPP's arguments (none: not asked), a configuration (empty: not
// asked), or what each registered plugin type is.
type request struct {
	Args     []string `json:"args,omitempty"`
	Config   string   `json:"config,omitempty"`
	Describe bool     `json:"describe,omitempty"`
}

// description is a plugin type as the loader and the data layer's dependency graph see an
// instance made with no parameters: the interfaces it implements, the data it produces and
// consumes, or the error its factory gives without parameters.
type description struct {
	Kinds    []string `json:"kinds,omitempty"`
	Produces []string `json:"produces,omitempty"`
	Consumes []string `json:"consumes,omitempty"`
	Err      string   `json:"err,omitempty"`
	// Extractors, of a data source, are the extractor types the data layer accepts under it
	// (Runtime.Configure: validateSourceExtractors).
	Extractors []string `json:"extractors,omitempty"`
}

// describeParameters are the parameters a type needs to be made at all.
var describeParameters = map[string]json.RawMessage{
	sourcenotifications.NotificationSourceType:            json.RawMessage(`{"version":"v1","kind":"Pod"}`),
	requestattributereporter.RequestAttributeReporterType: json.RawMessage(`{"attributes":[{"key":{"name":"n"},"expression":"1"}]}`),
}

// verdict is the answer: the error the EPP stops with, empty when it starts.
type verdict struct {
	ArgsErr   string `json:"argsErr,omitempty"`
	ConfigErr string `json:"configErr,omitempty"`
	// Plugins are the plugin types the loaded configuration holds (defaults included), by name.
	Plugins map[string]string `json:"plugins,omitempty"`
	// Types describes every registered plugin type.
	Types map[string]description `json:"types,omitempty"`
}

// describe instantiates every registered plugin type without parameters.
func describe() map[string]description {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	handle := fwkplugin.NewEppHandle(ctx, func() []types.NamespacedName { return nil })
	instances := map[string]fwkplugin.Plugin{}
	out := map[string]description{}
	for name, factory := range fwkplugin.Registry {
		p, err := func() (p fwkplugin.Plugin, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panics: %v", r)
				}
			}()
			return factory(name, describeParameters[name], handle)
		}()
		if err != nil {
			out[name] = description{Err: err.Error()}
			continue
		}
		var d description
		for kind, is := range map[string]bool{
			"filter": is[framework.Filter](p), "scorer": is[framework.Scorer](p), "picker": is[framework.Picker](p),
			"profileHandler": is[framework.ProfileHandler](p), "dataSource": is[fwkdl.DataSource](p),
			"extractor": is[fwkdl.Extractor](p), "parser": is[fwkrh.Parser](p),
			"saturationDetector": is[fwkfc.SaturationDetector](p), "fairnessPolicy": is[fwkfc.FairnessPolicy](p),
			"orderingPolicy": is[fwkfc.OrderingPolicy](p), "usageLimitPolicy": is[fwkfc.UsageLimitPolicy](p),
			"prepareData": is[fwkrq.PrepareDataPlugin](p), "admission": is[fwkrq.AdmissionPlugin](p),
			"preRequest": is[fwkrq.PreRequest](p), "responseHeader": is[fwkrq.ResponseHeader](p),
		} {
			if is {
				d.Kinds = append(d.Kinds, kind)
			}
		}
		if producer, ok := p.(fwkplugin.ProducerPlugin); ok {
			d.Produces = slices.Collect(maps.Keys(producer.Produces()))
		}
		if consumer, ok := p.(fwkplugin.ConsumerPlugin); ok {
			d.Consumes = slices.Collect(maps.Keys(consumer.Consumes()))
		}
		slices.Sort(d.Kinds)
		slices.Sort(d.Produces)
		slices.Sort(d.Consumes)
		out[name] = d
		instances[name] = p
	}
	for sourceType, source := range instances {
		src, ok := source.(fwkdl.DataSource)
		if !ok {
			continue
		}
		d := out[sourceType]
		for extractorType, extractor := range instances {
			ext, ok := extractor.(fwkdl.Extractor)
			if !ok {
				continue
			}
			cfg := &datalayer.Config{Sources: []datalayer.DataSourceConfig{{Plugin: src, Extractors: []fwkdl.Extractor{ext}}}}
			if datalayer.NewRuntime(time.Second).Configure(cfg, true, "", logr.Discard()) == nil {
				d.Extractors = append(d.Extractors, extractorType)
			}
		}
		slices.Sort(d.Extractors)
		out[sourceType] = d
	}
	return out
}

func is[T any](p fwkplugin.Plugin) bool {
	_, ok := p.(T)
	return ok
}

// registerInTreePlugins is cmd/epp/runner/runner.go's (Runner.registerInTreePlugins), with the
// feature gates its parseConfigurationPhaseOne registers.
func registerInTreePlugins() {
	fwkplugin.Register(prefix.PrefixCacheScorerPluginType, prefix.PrefixCachePluginFactory)
	fwkplugin.Register(picker.MaxScorePickerType, picker.MaxScorePickerFactory)
	fwkplugin.Register(picker.RandomPickerType, picker.RandomPickerFactory)
	fwkplugin.Register(picker.WeightedRandomPickerType, picker.WeightedRandomPickerFactory)
	fwkplugin.Register(profile.SingleProfileHandlerType, profile.SingleProfileHandlerFactory)
	fwkplugin.Register(kvcacheutilization.KvCacheUtilizationScorerType, kvcacheutilization.KvCacheUtilizationScorerFactory)
	fwkplugin.Register(queuedepth.QueueScorerType, queuedepth.QueueScorerFactory)
	fwkplugin.Register(runningrequests.RunningRequestsSizeScorerType, runningrequests.RunningRequestsSizeScorerFactory)
	fwkplugin.Register(loraaffinity.LoraAffinityScorerType, loraaffinity.LoraAffinityScorerFactory)
	fwkplugin.Register(tokenload.TokenLoadScorerType, tokenload.TokenLoadScorerFactory)
	fwkplugin.Register(fairness.GlobalStrictFairnessPolicyType, fairness.GlobalStrictFairnessPolicyFactory)
	fwkplugin.Register(fairness.RoundRobinFairnessPolicyType, fairness.RoundRobinFairnessPolicyFactory)
	fwkplugin.Register(ordering.FCFSOrderingPolicyType, ordering.FCFSOrderingPolicyFactory)
	fwkplugin.Register(ordering.EDFOrderingPolicyType, ordering.EDFOrderingPolicyFactory)
	fwkplugin.Register(ordering.SLODeadlineOrderingPolicyType, ordering.SLODeadlineOrderingPolicyFactory)
	fwkplugin.Register(usagelimits.StaticUsageLimitPolicyType, usagelimits.StaticPolicyFactory)
	fwkplugin.Register(reqdataprodprefix.ApproxPrefixCachePluginType, reqdataprodprefix.ApproxPrefixCacheFactory)
	fwkplugin.Register(predictedlatency.PredictedLatencyPluginType, predictedlatency.PredictedLatencyFactory)
	fwkplugin.Register(latencyproducer.LatencyDataProviderPluginType, latencyproducer.PredictedLatencyFactory)
	fwkplugin.Register(latencyslo.LatencyAdmissionPluginType, latencyslo.LatencyAdmissionFactory)
	fwkplugin.Register(prefixcacheaffinity.PluginType, prefixcacheaffinity.Factory)
	fwkplugin.Register(sloheadroomtier.PluginType, sloheadroomtier.Factory)
	fwkplugin.Register(latencyscorer.LatencyScorerType, latencyscorer.Factory)
	fwkplugin.Register(inflightload.InFlightLoadProducerType, inflightload.InFlightLoadProducerFactory)
	fwkplugin.Register(testfilter.HeaderBasedTestingFilterType, testfilter.HeaderBasedTestingFilterFactory)
	fwkplugin.Register(testresponsereceived.DestinationEndpointServedVerifierType, testresponsereceived.DestinationEndpointServedVerifierFactory)
	fwkplugin.Register(sourcemetrics.MetricsDataSourceType, sourcemetrics.MetricsDataSourceFactory)
	fwkplugin.Register(extractormetrics.MetricsExtractorType, extractormetrics.CoreMetricsExtractorFactory)
	fwkplugin.Register(sourcenotifications.NotificationSourceType, sourcenotifications.NotificationSourceFactory)
	fwkplugin.Register(sourcenotifications.EndpointNotificationSourceType, sourcenotifications.EndpointSourceFactory)
	fwkplugin.Register(requestattributereporter.RequestAttributeReporterType, requestattributereporter.RequestAttributeReporterPluginFactory)
	fwkplugin.Register(openai.OpenAIParserType, openai.OpenAIParserPluginFactory)
	fwkplugin.Register(vllmgrpc.VllmGRPCParserType, vllmgrpc.VllmGRPCParserPluginFactory)
	fwkplugin.Register(passthrough.PassthroughParserType, passthrough.PassthroughParserPluginFactory)
	fwkplugin.Register(concurrency.ConcurrencyDetectorType, concurrency.ConcurrencyDetectorFactory)
	fwkplugin.Register(utilization.UtilizationDetectorType, utilization.UtilizationDetectorFactory)

	loader.RegisterFeatureGate(datalayer.ExperimentalDatalayerFeatureGate)
	loader.RegisterFeatureGate(datalayer.EnableLegacyMetricsFeatureGate)
	loader.RegisterFeatureGate(flowcontrol.FeatureGate)
}

// parseArgs is Runner.Run's flag handling: AddFlags on a fresh flag set, Parse, Complete, Validate.
func parseArgs(args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the EPP panics: %v", r)
		}
	}()
	fs := pflag.NewFlagSet("epp", pflag.ContinueOnError)
	opts := runserver.NewOptions()
	opts.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := opts.Complete(); err != nil {
		return err
	}
	return opts.Validate()
}

// loadConfig is what the runner's setup does with a configuration before it talks to the cluster.
func loadConfig(text string) (plugins map[string]string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the EPP panics: %v", r)
		}
	}()
	logger := logr.Discard()
	raw, gates, err := loader.LoadRawConfig([]byte(text), logger)
	if err != nil {
		return nil, fmt.Errorf("failed to parse config - %w", err)
	}
	// Plugins may start work on the handle's context (the prefix cache's eviction); end it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	handle := fwkplugin.NewEppHandle(ctx, func() []types.NamespacedName { return nil })
	cfg, err := loader.InstantiateAndConfigure(raw, handle, logger)
	if err != nil {
		return nil, fmt.Errorf("failed to load the configuration - %w", err)
	}
	if _, err := datalayer.ValidateAndOrderDataDependencies(handle.GetAllPlugins()); err != nil {
		return nil, fmt.Errorf("failed to load the configuration - %w", err)
	}
	// Runner.configureAndStartDatalayer, before Start.
	newMetrics := !gates[datalayer.EnableLegacyMetricsFeatureGate]
	disallowed := ""
	if !newMetrics {
		disallowed = extractormetrics.MetricsExtractorType
	}
	if err := datalayer.NewRuntime(runserver.NewOptions().RefreshMetricsInterval).Configure(cfg.DataConfig, newMetrics, disallowed, logger); err != nil {
		return nil, fmt.Errorf("failed to initialize data layer - %w", err)
	}
	plugins = map[string]string{}
	for name, p := range handle.GetAllPluginsWithNames() {
		plugins[name] = p.TypedName().Type
	}
	return plugins, nil
}

func main() {
	registerInTreePlugins()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "oracle: bad request:", err)
			os.Exit(2)
		}
		var v verdict
		if req.Describe {
			v.Types = describe()
		}
		if req.Args != nil {
			if err := parseArgs(req.Args); err != nil {
				v.ArgsErr = err.Error()
			}
		}
		if req.Config != "" {
			plugins, err := loadConfig(req.Config)
			if err != nil {
				v.ConfigErr = err.Error()
			}
			v.Plugins = plugins
		}
		if err := out.Encode(v); err != nil {
			fmt.Fprintln(os.Stderr, "oracle:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(2)
	}
}

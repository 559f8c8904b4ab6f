// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// Release is the Endpoint Picker generation a router targets, as its spec names it
// (endpointPicker.release): it decides the image, the configuration's kind and loader rules, the
// command line, and what the EPP reads from the cluster.
type Release string

const (
	// ReleaseRouter: llm-d-router v0.10.0's endpoint picker and disaggregation sidecar (default).
	ReleaseRouter Release = "llm-d-router-v0.10.0"
	// ReleaseGIE150: GIE v1.5.0's reference EPP, its last release with cmd/epp (GIE v1.6.0's README).
	ReleaseGIE150 Release = "gie-v1.5.0"
	// ReleaseGIE: GIE v1.2.0's reference EPP, and llm-d-inference-scheduler v0.4.0 with its
	// routing sidecar v0.4.0 for prefill/decode or llm-d's plugins: what fusioninfer rendered
	// first, and the only release here that reads a v1alpha2 InferencePool.
	ReleaseGIE Release = "gie-v1.2.0"
	// ReleaseLWEPP: GIE v1.6.0's lightweight Endpoint Picker (cmd/lwepp), which it keeps for its
	// conformance tests: round-robin over the pool's pods, no configuration.
	ReleaseLWEPP Release = "gie-lwepp-v1.6.0"
)

// Releases are the release names, the default first.
func Releases() []Release { return []Release{ReleaseRouter, ReleaseGIE150, ReleaseGIE, ReleaseLWEPP} }

// releaseNames are Releases, for a message: "a, b, c".
func releaseNames() string {
	names := make([]string, 0, len(Releases()))
	for _, r := range Releases() {
		names = append(names, string(r))
	}
	return strings.Join(names, ", ")
}

// Images of the releases' Endpoint Pickers.
const (
	// ImageGIE150: GIE v1.5.0's config/charts/inferencepool/values.yaml (inferenceExtension.image).
	ImageGIE150 = "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"
	// ImageLWEPP: GIE v1.6.0's conformance/resources/base.yaml, and the release issue template
	// (.github/ISSUE_TEMPLATE/new-release.md: registry.k8s.io/gateway-api-inference-extension/lwepp:vX.Y.Z).
	ImageLWEPP = "registry.k8s.io/gateway-api-inference-extension/lwepp:v1.6.0"
)

// Lease name suffixes of the EPPs' leader election (LeaderElectionID "epp-{namespace}-{pool}{suffix}").
const (
	// GIE v1.2.0 and v1.5.0: pkg/epp/server/controller_manager.go NewDefaultManager.
	leaseSuffixGIE = ".gateway-api-inference-extension.sigs.k8s.io"
	// llm-d-router v0.10.0: pkg/epp/server/controller_manager.go NewDefaultManager.
	leaseSuffixRouter = ".llm-d.ai"
)

// API groups the EPPs read objects of.
const (
	GroupInferenceV1     = "inference.networking.k8s.io"   // InferencePool v1
	GroupInferenceX      = "inference.networking.x-k8s.io" // InferencePool v1alpha2, InferenceObjective, InferenceModelRewrite
	GroupLLMD            = "llm-d.ai"                      // llm-d-router's InferenceObjective and InferenceModelRewrite
	resourceObjectives   = "inferenceobjectives"
	resourceModelRewrite = "inferencemodelrewrites"
)

// release is what one release's EPP process is, as the project renders and checks it.
type release struct {
	// configFile: it reads an EndpointPickerConfig from --config-file.
	configFile bool
	// diagnostics: it has --metrics-endpoint-auth and --tracing.
	diagnostics bool
	// leaseSuffix: its leader election's lease; empty: it has no leader election, every replica serves.
	leaseSuffix string
	// poolGroups are the API groups of the InferencePools it reads.
	poolGroups []string
	// objectiveGroups are the API groups whose InferenceObjectives it may watch, preferred
	// first; rewrites: and whose InferenceModelRewrites. discovers: it asks the API server which
	// of them it serves and watches each kind in the first that does (WatchedGroup).
	objectiveGroups     []string
	rewrites, discovers bool
	// prefillDecode: it routes prefill/decode services (a prefill pod, then a decode pod).
	prefillDecode bool
	// flags are the flags its command defines; deprecated the ones it warns of; refused the ones
	// it stops on when set.
	flags, deprecated, refused []string
	// kvCacheMetricFlag: it reads the KV-cache metric's name from --kv-cache-usage-percentage-metric
	// alone, whose default is vLLM's old name (GIE v1.2.0 pkg/epp/server/runserver.go
	// DefaultKvCacheUsagePercentageMetric, vllm:gpu_cache_usage_perc, read by cmd/epp/runner/runner.go
	// setupMetricsV1 and setupDatalayer), so its KV-cache scorer and saturation detector would read
	// no data: the router passes vllm.MetricKVCacheUsage. The later EPPs take metric names from their
	// data layer, whose vLLM default is that name.
	kvCacheMetricFlag bool
	// noPickerMetrics: it exports none of the Endpoint Picker's own metrics (pkg/epp/metrics:
	// inference_extension_*, inference_objective_*, inference_pool_*), only controller-runtime's.
	noPickerMetrics bool
	// requestSeries: its gauges of the requests its flow control holds and of those running on
	// the servers (RequestSeries); none: it cannot hold a request while the pool has no endpoint.
	requestSeries []string
}

// eppFlags are the flags of pkg/epp/server/options.go (AddFlags) and the logging options
// (pkg/common/observability/logging: -v and controller-runtime's zap flags) common to GIE v1.5.0's
// and llm-d-router v0.10.0's EPPs.
var eppFlags = []string{
	"grpc-port", "ha-enable-leader-election", "pool-group", "pool-namespace", "pool-name",
	"endpoint-selector", "endpoint-target-ports", "disable-endpoint-subset-filter",
	"refresh-metrics-interval", "refresh-prometheus-metrics-interval", "metrics-staleness-threshold",
	"total-queued-requests-metric", "total-running-requests-metric", "kv-cache-usage-percentage-metric",
	"lora-info-metric", "cache-info-metric",
	"v", "zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding",
	"tracing", "health-checking", "metrics-port", "grpc-health-port", "enable-pprof", "cert-path",
	"enable-cert-reload", "secure-serving", "metrics-endpoint-auth", "config-file", "config-text",
}

// metricNameFlags: both EPPs' Options.Validate refuse them when set ("configure metrics via
// engineConfigs in EndpointPickerConfig instead"); metric names go in the data layer.
var metricNameFlags = []string{
	"total-queued-requests-metric", "total-running-requests-metric", "kv-cache-usage-percentage-metric",
	"lora-info-metric", "cache-info-metric",
}

var releases = map[Release]release{
	ReleaseRouter: {
		configFile: true, diagnostics: true, leaseSuffix: leaseSuffixRouter,
		// pkg/epp/server/controller_manager.go caches v1.InferencePool only.
		poolGroups: []string{GroupInferenceV1},
		// pkg/epp/server/controller_config.go: supportedInferenceAPIGVs, llm-d.ai preferred.
		objectiveGroups: []string{GroupLLMD, GroupInferenceX}, rewrites: true, discovers: true, prefillDecode: true,
		// pkg/epp/server/options.go AddFlags at v0.10.0 adds these to GIE's.
		flags: append(slices.Clone(eppFlags), "drain-timeout", "grpc-max-recv-msg-size", "grpc-max-send-msg-size",
			"emit-endpoint-scores", "enable-grpc-stream-metrics", "tls-min-version", "tls-cipher-suites",
			"metrics-client-ca-file", "metrics-cert-dir", "allow-experimental-plugins"),
		deprecated: metricNameFlags, refused: metricNameFlags,
		// pkg/epp/metrics/llm_d_router_metrics.go: llmdFlowControlQueueSize, llmdRunningRequests.
		requestSeries: []string{"llm_d_epp_flow_control_queue_size", "llm_d_epp_request_running"},
	},
	ReleaseGIE150: {
		configFile: true, diagnostics: true, leaseSuffix: leaseSuffixGIE,
		// pkg/epp/server/controller_manager.go and controller/inferencepool_reconciler.go: v1 only.
		poolGroups: []string{GroupInferenceV1},
		// pkg/epp/server/controller_config.go populateWithDiscovery: objectives and model rewrites.
		objectiveGroups: []string{GroupInferenceX}, rewrites: true, discovers: true,
		// pkg/epp/server/options.go AddFlags; MarkDeprecated on the metrics scraping flags.
		flags: append(slices.Clone(eppFlags), "model-server-metrics-scheme", "model-server-metrics-path",
			"model-server-metrics-port", "model-server-metrics-https-insecure-skip-verify"),
		deprecated: append(slices.Clone(metricNameFlags), "model-server-metrics-scheme", "model-server-metrics-path",
			"model-server-metrics-port", "model-server-metrics-https-insecure-skip-verify"),
		refused: metricNameFlags,
		// pkg/epp/metrics/metrics.go: flowControlQueueSize, runningRequests.
		requestSeries: []string{"inference_extension_flow_control_queue_size", "inference_objective_running_requests"},
	},
	ReleaseGIE: {
		configFile: true, diagnostics: true, leaseSuffix: leaseSuffixGIE,
		// pkg/epp/server/controller_manager.go defaultManagerOptions: a v1alpha2 or a v1 pool by --pool-group.
		poolGroups: []string{GroupInferenceV1, GroupInferenceX},
		// the same file caches v1alpha2.InferenceObjective unconditionally, and
		// pkg/epp/server/runserver.go SetupWithManager always starts its reconciler: no discovery.
		objectiveGroups: []string{GroupInferenceX}, prefillDecode: true,
		// cmd/epp/runner/runner.go's flag variables at v1.2.0, and zap's (Runner.Run: BindFlags).
		flags: []string{"grpc-port", "grpc-health-port", "metrics-port", "metrics-endpoint-auth", "enable-pprof",
			"pool-name", "pool-group", "pool-namespace", "endpoint-selector", "endpoint-target-ports", "v",
			"secure-serving", "health-checking", "cert-path", "total-queued-requests-metric",
			"kv-cache-usage-percentage-metric", "lora-info-metric", "cache-info-metric", "refresh-metrics-interval",
			"refresh-prometheus-metrics-interval", "metrics-staleness-threshold", "config-file", "config-text",
			"model-server-metrics-port", "model-server-metrics-path", "model-server-metrics-scheme",
			"model-server-metrics-https-insecure-skip-verify", "ha-enable-leader-election", "tracing",
			"zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding"},
		kvCacheMetricFlag: true,
	},
	ReleaseLWEPP: {
		// cmd/lwepp/main.go and pkg/lwepp/server/options.go AddFlags (zap's flags from main); no
		// leader election, no configuration; controller_manager.go caches pods and v1 pools only.
		poolGroups: []string{GroupInferenceV1},
		// cmd/lwepp/main.go serves controller-runtime's metrics registry (metricsserver.Options)
		// and pkg/lwepp registers no collector of its own.
		noPickerMetrics: true,
		flags: []string{"grpc-port", "pool-group", "pool-namespace", "pool-name", "metrics-port", "endpoint-target-ports",
			"grpc-health-port", "health-checking", "secure-serving",
			"zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding"},
	},
}

// Known reports whether the release is one of Releases.
func (r Release) Known() bool {
	_, ok := releases[r]
	return ok
}

// ReadsConfig reports whether the release's EPP reads an EndpointPickerConfig (the router's
// ConfigMap); lwepp has none.
func (r Release) ReadsConfig() bool { return releases[r].configFile }

// IndexesKVEvents reports whether the release's EPP has llm-d-router's precise-prefix-cache-producer,
// which strategy precise-prefix-cache needs: llm-d-router v0.10.0 only (the GIE releases'
// cmd/epp/runner/runner.go registers no such plugin; lwepp has none at all).
func (r Release) IndexesKVEvents() bool { return r == ReleaseRouter }

// PrefillDecode reports whether the release routes prefill/decode services.
func (r Release) PrefillDecode() bool { return releases[r].prefillDecode }

// ReadsPoolGroup reports whether the release's EPP reads InferencePools of the API group.
func (r Release) ReadsPoolGroup(group string) bool {
	return slices.Contains(releases[r].poolGroups, group)
}

// PoolGroups are the API groups of the InferencePools the release's EPP reads.
func (r Release) PoolGroups() []string { return slices.Clone(releases[r].poolGroups) }

// ObjectiveGroups are the API groups whose InferenceObjectives the release's EPP watches, and
// whether it watches their InferenceModelRewrites too.
func (r Release) ObjectiveGroups() (groups []string, rewrites bool) {
	return slices.Clone(releases[r].objectiveGroups), releases[r].rewrites
}

// ChoosesGroup reports whether the group the release's EPP watches objectives in depends on the
// groups the cluster serves when it starts (WatchedGroup: it discovers, among more than one), so
// that a change of those groups needs the EPP restarted: llm-d-router v0.10.0.
func (r Release) ChoosesGroup() bool {
	return releases[r].discovers && len(releases[r].objectiveGroups) > 1
}

// Resources the EPP watches in its objective groups.
const (
	ResourceObjectives    = resourceObjectives
	ResourceModelRewrites = resourceModelRewrite
)

// Kinds the EPP watches in its objective groups.
const (
	KindObjective    = "InferenceObjective"
	KindModelRewrite = "InferenceModelRewrite"
)

// WatchedGroup is the API group whose objects of kind (KindObjective or KindModelRewrite) the
// release's EPP watches on a cluster whose API server serves that kind in the groups served;
// watched is false when it watches none. An EPP that discovers (llm-d-router v0.10.0, GIE
// v1.5.0: pkg/epp/server/controller_config.go populateWithDiscovery, at start-up) takes the first
// of its groups the cluster serves the kind in, each kind on its own: llm-d-router's llm-d.ai
// before inference.networking.x-k8s.io, so with both installed it ignores the objects of the
// latter (it logs "EPP will prefer the new group and IGNORE legacy resources"). GIE v1.2.0 watches
// its one group whether or not the cluster serves it.
func (r Release) WatchedGroup(kind string, served []string) (group string, watched bool) {
	rel := releases[r]
	if len(rel.objectiveGroups) == 0 || (kind == KindModelRewrite && !rel.rewrites) || (kind != KindObjective && kind != KindModelRewrite) {
		return "", false
	}
	if !rel.discovers {
		return rel.objectiveGroups[0], true
	}
	for _, g := range rel.objectiveGroups {
		if slices.Contains(served, g) {
			return g, true
		}
	}
	return "", false
}

// ElectsLeader reports whether the release's EPP can elect a leader among its replicas
// (--ha-enable-leader-election, FlagLeaderElection); lwepp has no leader election and every
// replica serves. Whether a router's pickers do elect is the router's (api.Role
// EndpointPickerLeaderElection): a standalone router's run active-active.
func (r Release) ElectsLeader() bool { return releases[r].leaseSuffix != "" }

// FlagLeaderElection is the flag that makes the replicas of an EPP that ElectsLeader elect one:
// pkg/epp/server/options.go in GIE v1.5.0 and llm-d-router v0.10.0, cmd/epp/runner/runner.go in
// GIE v1.2.0. Without it every replica is a leader (runner.go stores isLeader true), runs its
// own reconcilers and is Ready once its pool has synced.
const FlagLeaderElection = "--ha-enable-leader-election"

// The gRPC health services the EPPs answer on their health port.
const (
	// HealthServiceEPP: the EPP's own service name, answered SERVING once its pool has synced
	// (GIE v1.6.0 pkg/lwepp/server/runserver.go HealthServerRunnable; the health servers below
	// without leader election answer every name alike).
	HealthServiceEPP = "inference-extension"
	// HealthServiceLiveness and HealthServiceReadiness: with leader election, liveness is SERVING
	// on every replica and readiness only on the elected leader whose pool has synced (GIE
	// v1.2.0's and v1.5.0's cmd/epp/runner/health.go, llm-d-router v0.10.0's too, healthServer.Check;
	// v0.10.0's also NOT_SERVING while draining after SIGTERM). An unknown name is SERVICE_UNKNOWN
	// there, so HealthServiceEPP would fail every probe of a replica that elects.
	HealthServiceLiveness  = "liveness"
	HealthServiceReadiness = "readiness"
)

// HealthServices are the gRPC health services the liveness and readiness probes of replicas of
// the release's EPP ask, as its chart's probes do (GIE v1.5.0
// config/charts/epplib/templates/_deployment.yaml, llm-d-router v0.10.0
// config/charts/routerlib/templates/_deployment.yaml; lwepp's GIE v1.6.0
// conformance/resources/base.yaml): with leader election only the leader is Ready, so it alone is
// an endpoint of the EPP's Service and gets ext_proc streams; the standbys live, never restarted.
// A standby does serve ext_proc on its port (the servers run outside the election:
// runnable.NoLeaderElection in GIE v1.5.0 pkg/epp/server/runserver.go AsRunnable), but GIE's
// reconcilers run on the leader alone, so a standby's datastore is empty and it cannot pick;
// llm-d-router v0.10.0 fills it on standbys too (its haPopulateNonLeaderDatastore feature gate,
// pkg/epp/server/controller_config.go) and still reports them not Ready.
func (r Release) HealthServices(leaderElection bool) (liveness, readiness string) {
	if leaderElection && r.ElectsLeader() {
		return HealthServiceLiveness, HealthServiceReadiness
	}
	return HealthServiceEPP, HealthServiceEPP
}

// LeaseName is the lease the release's EPP elects its leader with, as its manager names it.
func (r Release) LeaseName(namespace, pool string) string {
	return "epp-" + namespace + "-" + pool + releases[r].leaseSuffix
}

// Flags are the release's EPP flags, as a Deployment passes them.
type Flags struct {
	PoolName, PoolNamespace, PoolGroup string
	// ConfigFile is the configuration's path; unused by a release that reads none.
	ConfigFile                            string
	GRPCPort, GRPCHealthPort, MetricsPort int
	// LeaderElection: the replicas elect a leader (FlagLeaderElection), where the release can.
	LeaderElection bool
}

// MetricsAuth: the release's picker authenticates and authorizes who reads its /metrics
// (--metrics-endpoint-auth, on by default: GIE v1.2.0 cmd/epp/runner/runner.go, v1.5.0
// pkg/epp/server/options.go NewOptions, and llm-d-router's fork of it); lwepp has no such flag
// and serves its metrics to anyone.
func (r Release) MetricsAuth() bool { return releases[r].diagnostics }

// PickerMetrics: the release's picker exports the Endpoint Picker's own metrics (its scheduling
// decisions, requests by model, the pool's ready pods), which the dashboard's picker panels read;
// lwepp exports only controller-runtime's.
func (r Release) PickerMetrics() bool { return !releases[r].noPickerMetrics }

// RequestSeries are the Prometheus series of the requests the release's picker holds in its
// flow-control queue and of those it has sent to the servers and not yet seen end: their sum is
// its load, and it exists while the pool has no endpoint. Empty for the releases that cannot hold
// a request meanwhile (HoldsRequestsAtZero).
func (r Release) RequestSeries() []string { return slices.Clone(releases[r].requestSeries) }

// HoldsRequestsAtZero: with the flowControl feature gate the release's picker queues a request
// while its pool has no endpoint, until one is Ready or the request's TTL ends. Its saturation
// detectors report an empty pool saturated (GIE v1.5.0 and llm-d-router v0.10.0
// pkg/epp/framework/plugins/flowcontrol/saturationdetector/utilization/detector.go Saturation and
// concurrency/detector.go), so the dispatch cycle holds the queue; llm-d-router v0.10.0 names it
// "a scale-from-zero waiting room" (pkg/epp/flowcontrol/controller/internal/processor.go). GIE
// v1.2.0 and lwepp have no flow control.
func (r Release) HoldsRequestsAtZero() bool { return len(releases[r].requestSeries) > 0 }

// HoldingReleases are the releases that HoldsRequestsAtZero, for a message.
func HoldingReleases() []string {
	var names []string
	for _, r := range Releases() {
		if r.HoldsRequestsAtZero() {
			names = append(names, string(r))
		}
	}
	return names
}

// Args are the EPP's command line: as the release's chart or manifests pass it (GIE v1.5.0's
// config/charts/epplib/templates/_deployment.yaml; lwepp's in GIE v1.6.0's
// conformance/resources/base.yaml), with the ports and pool always explicit, the metrics behind
// token review where the release has it (MetricsAuth), no tracing, JSON logs. A metric-name flag only
// where the release reads the metric from it alone: GIE v1.2.0's --kv-cache-usage-percentage-metric
// with vLLM's current name (vllm.MetricKVCacheUsage); the later EPPs refuse metric-name flags
// (metric names belong in the configuration's data layer).
func (r Release) Args(f Flags) []string {
	rel := releases[r]
	args := []string{"--pool-name", f.PoolName, "--pool-namespace", f.PoolNamespace, "--pool-group", f.PoolGroup}
	if rel.configFile {
		args = append(args, "--config-file", f.ConfigFile)
	}
	args = append(args,
		"--grpc-port", strconv.Itoa(f.GRPCPort),
		"--grpc-health-port", strconv.Itoa(f.GRPCHealthPort),
		"--metrics-port", strconv.Itoa(f.MetricsPort))
	if rel.diagnostics {
		// Metrics auth stays on (its default): the picker reviews the scraper's token
		// (core/render routerauth.go), as GIE's chart runs it unless auth is disabled
		// (config/charts/epplib/templates/_deployment.yaml).
		args = append(args, "--tracing=false")
	}
	if rel.kvCacheMetricFlag {
		args = append(args, "--kv-cache-usage-percentage-metric", vllm.MetricKVCacheUsage)
	}
	args = append(args, "--zap-encoder", "json")
	if f.LeaderElection && r.ElectsLeader() {
		args = append(args, FlagLeaderElection)
	}
	return args
}

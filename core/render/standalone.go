// SPDX-License-Identifier: Apache-2.0

package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// A standalone router (routerMode standalone) is entered through its own proxy: an Envoy sidecar
// in the Endpoint Picker's pod that asks the picker on loopback (ext_proc) which pod serves each
// request and sends it there, and a Service clients call. This mirrors the standalone charts,
// llm-d-router v0.10.0's config/charts/llm-d-router-standalone (values.yaml router.proxy,
// proxy.mode sidecar, the envoy preset; routerlib templates/_helpers.tpl) and GIE v1.5.0's
// config/charts/standalone (values.yaml inferenceExtension.sidecar; the last GIE tag with the
// chart: v1.6.0 removed config/charts). Their bootstraps share the listeners, clusters and
// ext_proc settings; llm-d's adds "::" listeners, a JSON access log and an active health check of
// ext_proc, GIE's logs at trace. llm-d's is followed where they differ, and the comments say where
// the render departs from both.
//
// Every pod is a door of the router's Service, so the door must not close with one picker:
// the pickers run active-active (no leader election: api.Role.EndpointPickerLeaderElection), roll
// one at a time with a surge, drain before they stop, and a client cannot name its own
// destination (docs/design/0044-a-standalone-door-that-stays-open.md).

// Suffixes of a standalone router's objects.
const (
	suffixRouterProxyConfig = "router-proxy-config"
	suffixRouterService     = "router-service"
)

// The proxy's container, ports and files.
const (
	// routerProxyImage is the Envoy both charts run (sidecar.image; presets.envoy.image:
	// distroless-v1.33.2), in the image built on a base with a shell: the drain hook
	// (proxyDrainHook) needs bash, which the distroless image lacks.
	routerProxyImage         = "docker.io/envoyproxy/envoy:v1.33.2"
	routerProxyContainerName = "envoy-proxy" // llm-d-router's preset name (GIE's: envoy-sidecar)
	// RouterProxyPort is the proxy's listener and the router Service's one port: both charts'
	// listener "vllm" and container port http-8081.
	RouterProxyPort = 8081
	// routerProxyReadyPort serves /ready (Envoy's health_check filter) and /stats/prometheus:
	// both charts' listener envoy-proxy-ready-0.0.0.0-19001, container port metrics-19001.
	routerProxyReadyPort = 19001
	// routerProxyAdminPort is Envoy's admin interface, on loopback only (both charts' admin).
	routerProxyAdminPort = 19000
	// routerProxyMetricsPortName is the ready listener's container port, which also serves
	// Envoy's stats at /stats/prometheus (both charts' metrics-19001): the router's PodMonitor
	// scrapes it.
	routerProxyMetricsPortName = "metrics-19001"
	routerProxyStatsPath       = "/stats/prometheus"
	// routerProxyDrainSeconds is how long a stopping proxy drains (the charts' --drain-time-s):
	// its streams have that long to end after the pod leaves the Service.
	routerProxyDrainSeconds = 60
	// extProcHealthInterval is how often the proxy asks its own picker whether it serves: a
	// picker that died costs its proxy's requests at most that long (and those in flight).
	extProcHealthInterval = "0.5s"
	// extProcMessageTimeout is how long the proxy waits for the picker's answer to a message
	// (both charts' message_timeout: 1000s).
	extProcMessageTimeout  = 1000 * time.Second
	routerProxyConfigDir   = "/etc/envoy"
	routerProxyConfigFile  = "envoy.yaml"
	routerProxyConfigVol   = "router-proxy-config"
	routerServicePortName  = "http"
	annotationProxyConfig  = api.ReservedLabelPrefix + "router-proxy-config-hash"
	extProcClusterName     = "ext_proc"
	originalDstClusterName = "original_destination_cluster"
	statsClusterName       = "prometheus_stats"
	// DestinationEndpointHeader is the header the Endpoint Picker sets to the pod it picked and the
	// proxy's original-destination cluster routes by: metadata.DestinationEndpointKey in
	// pkg/epp/metadata/consts.go of every release here (GIE v1.2.0, v1.5.0, llm-d-router v0.10.0;
	// lwepp's handlers set the same key).
	DestinationEndpointHeader = "x-gateway-destination-endpoint"
)

// routerProxyArgs: the charts' args, with llm-d-router's --log-level warn (GIE's chart logs at
// trace, every request's headers and bodies) and llm-d's service node name.
var routerProxyArgs = []string{
	"--service-node", routerProxyContainerName,
	"--log-level", "warn",
	"--cpuset-threads",
	"--drain-strategy", "immediate",
	"--drain-time-s", strconv.Itoa(routerProxyDrainSeconds),
	"-c", routerProxyConfigDir + "/" + routerProxyConfigFile,
}

// routerProxyResources are llm-d-router v0.10.0's standalone chart's (values.yaml
// router.proxy.resources): the proxy carries every request and response body of the router.
func routerProxyResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")},
	}
}

// routedHeaders are the request headers an address is read from on the way to a model server:
// the proxy's original-destination cluster reads DestinationEndpointHeader, and llm-d's
// disaggregation sidecar on a decode pod sends the prefill (and encode, rank, KV-cache source) to
// the addresses in the others (llm-d-router v0.10.0 pkg/common/routing/common.go; llm-d's
// inference scheduler v0.4.0 pkg/common, x-prefiller-host-port). The picker sets them; one a
// client sent would be honoured where the picker sets none (or fails open), an open relay to any
// address in the cluster, so the proxy removes them before ext_proc.
var routedHeaders = []string{
	DestinationEndpointHeader,
	"x-prefiller-host-port",
	"x-encoder-hosts-ports",
	"x-data-parallel-host-port",
	"x-kv-cache-source-host-port",
}

// proxyAccessLogFormat is each request's access log line, JSON (as llm-d's chart logs, its format
// elided there): Envoy's default format's fields, and the pod the picker chose.
var proxyAccessLogFormat = map[string]string{
	"start_time":            "%START_TIME%",
	"method":                "%REQ(:METHOD)%",
	"path":                  "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
	"protocol":              "%PROTOCOL%",
	"response_code":         "%RESPONSE_CODE%",
	"response_flags":        "%RESPONSE_FLAGS%",
	"response_code_details": "%RESPONSE_CODE_DETAILS%",
	"bytes_received":        "%BYTES_RECEIVED%",
	"bytes_sent":            "%BYTES_SENT%",
	"duration_ms":           "%DURATION%",
	"upstream_host":         "%UPSTREAM_HOST%",
	"picked_endpoint":       "%REQ(" + DestinationEndpointHeader + ")%",
	"x_forwarded_for":       "%REQ(X-FORWARDED-FOR)%",
	"user_agent":            "%REQ(USER-AGENT)%",
	"request_id":            "%REQ(X-REQUEST-ID)%",
	"authority":             "%REQ(:AUTHORITY)%",
}

// proxyDrainHook drains Envoy when its pod stops, before the kubelet's SIGTERM, at which Envoy
// closes its listeners and every connection at once: it fails Envoy's health check (the ready
// listener's /ready answers 503) and starts the graceful drain (Envoy's admin, POST
// /healthcheck/fail and /drain_listeners?graceful: docs operations/admin and
// arch_overview/operations/draining: connections are told to close, with
// --drain-strategy immediate at once, and new ones still accepted until --drain-time-s ends),
// then waits out the drain. The pod has left the Service's endpoints as it began terminating, so
// no new client arrives; streams in flight have routerProxyDrainSeconds to end. Bash's /dev/tcp
// speaks to the admin port: the image has no curl. A POST that fails (the admin is gone) still
// leaves the wait.
func proxyDrainHook() *corev1.Lifecycle {
	post := `post() { (exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(routerProxyAdminPort) +
		` && printf 'POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$1" >&3 && cat <&3 > /dev/null); }; `
	script := post + `post /healthcheck/fail; post '/drain_listeners?graceful'; sleep ` + strconv.Itoa(routerProxyDrainSeconds)
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/bash", "-c", script}}}}
}

// pickerDrainWait keeps the Endpoint Picker beside a draining proxy answering until the drain is
// over (a sleep action: the picker's image has no shell): SIGTERM reaches both together, so the
// proxy never asks a picker that is gone. llm-d-router v0.10.0's picker then drains on its own
// (NOT_SERVING for 30 s), within the pod's grace period (eppTerminationGrace).
func pickerDrainWait() *corev1.Lifecycle {
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: routerProxyDrainSeconds}}}
}

// rollingDoor is a standalone router's rollout: a new picker and proxy come up and are Ready
// before an old one goes, one at a time, so the Service always has every replica's worth of
// doors (the pickers do not elect, so a new one is Ready on its own).
func rollingDoor() appsv1.DeploymentStrategy {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one}}
}

// standaloneRefs are a standalone router's proxy configuration; the Endpoint Picker's Deployment
// needs it.
func standaloneRefs(svc *api.InferenceService) []Ref {
	return []Ref{routerRef(svc, KindConfigMap, api.RouterProxyConfigName(svc.Name), suffixRouterProxyConfig)}
}

// routerServiceRef is the Service clients call, last as an HTTPRoute is: it sends traffic once the
// pool, the picker and its proxy and every awaited replica are up.
func routerServiceRef(svc *api.InferenceService, dependsOn []string) Ref {
	ref := routerRef(svc, KindService, api.RouterServiceName(svc.Name), suffixRouterService, dependsOn...)
	ref.Awaited = svc.Spec.AwaitMode() != api.AwaitNone
	return ref
}

// proxyBootstrap is the Envoy bootstrap of the router's proxy: the charts' values.yaml
// (GIE v1.5.0 inferenceExtension.sidecar.configMap.data envoy.yaml; llm-d-router v0.10.0
// router.proxy.presets.envoy.configMap.data envoy.yaml), field for field but what is said below.
func (r *routing) proxyBootstrap() envoyBootstrap {
	fileLog := func(path string) envoyAccessLog {
		return envoyAccessLog{Name: accessLoggerFile, TypedConfig: envoyFileAccessLog{Type: typeFileAccessLog, Path: path}}
	}
	requestLog := fileLog("/dev/stdout")
	requestLog.TypedConfig.LogFormat = &envoyLogFormat{JSONFormat: proxyAccessLogFormat}
	// The listener's access log: only requests no route matched (response flag NR).
	noRouteLog := requestLog
	noRouteLog.Filter = &envoyAccessLogFltr{}
	noRouteLog.Filter.ResponseFlagFilter.Flags = []string{"NR"}
	readyHeader := envoyHeaderMatch{Name: ":path"}
	readyHeader.StringMatch.Exact = "/ready"
	ready := envoyListener{
		Name:                "envoy-proxy-ready-0.0.0.0-" + strconv.Itoa(routerProxyReadyPort),
		Address:             socketAddress("0.0.0.0", routerProxyReadyPort),
		AdditionalAddresses: ipv6Too(routerProxyReadyPort),
		FilterChains: []envoyFilterChain{{Filters: []envoyFilter{{Name: filterHTTPConnectionManager, TypedConfig: envoyHTTPConnectionManager{
			Type: typeHTTPConnectionManager, StatPrefix: "envoy-ready-http",
			RouteConfig: envoyRouteConfig{Name: "local_route", VirtualHosts: []envoyVirtualHost{{
				Name: statsClusterName, Domains: []string{"*"},
				Routes: []envoyRoute{{Match: envoyRouteMatch{Prefix: "/stats/prometheus"}, Route: envoyRouteAction{Cluster: statsClusterName}}},
			}}},
			HTTPFilters: []envoyHTTPFilter{
				{Name: filterHealthCheck, TypedConfig: envoyHealthCheckFilter{Type: typeHealthCheckFilter, Headers: []envoyHeaderMatch{readyHeader}}},
				{Name: filterRouter, TypedConfig: envoyRouterFilter{Type: typeRouter}},
			},
		}}}}},
	}
	extProc := envoyExtProc{
		Type: typeExtProc,
		// Fail closed: a standalone router refuses failureMode FailOpen (api validateRouterRole).
		// llm-d's chart fails open by default (values.yaml router.proxy.failOpen: true), which
		// with the original-destination cluster as the one upstream sends a request the picker
		// did not answer to the address its header names, or nowhere.
		FailureModeAllow: false,
		ProcessingMode: envoyProcessingMode{
			RequestHeaderMode: "SEND", ResponseHeaderMode: "SEND",
			RequestBodyMode: "FULL_DUPLEX_STREAMED", ResponseBodyMode: "FULL_DUPLEX_STREAMED",
			RequestTrailerMode: "SEND", ResponseTrailerMode: "SEND",
		},
		// the chart's 1000s, or longer than a request the picker holds for a role at zero
		// replicas to wake (its TTL's answer then comes first)
		MessageTimeout: envoyDuration(max(extProcMessageTimeout, r.svc.Spec.WakeTimeout()+time.Minute)),
	}
	extProc.GRPCService.EnvoyGRPC.ClusterName = extProcClusterName
	extProc.GRPCService.EnvoyGRPC.Authority = "localhost:" + strconv.Itoa(eppGRPCPort)
	extProc.GRPCService.Timeout = "10s"
	serving := envoyListener{
		Name:                          "vllm",
		Address:                       socketAddress("0.0.0.0", RouterProxyPort),
		AdditionalAddresses:           ipv6Too(RouterProxyPort),
		PerConnectionBufferLimitBytes: 32768,
		AccessLog:                     []envoyAccessLog{noRouteLog},
		FilterChains: []envoyFilterChain{{Name: "vllm", Filters: []envoyFilter{{Name: filterHTTPConnectionManager, TypedConfig: envoyHTTPConnectionManager{
			Type: typeHTTPConnectionManager, StatPrefix: "http-" + strconv.Itoa(RouterProxyPort),
			RouteConfig: envoyRouteConfig{Name: "vllm", VirtualHosts: []envoyVirtualHost{{
				Name: "vllm-default", Domains: []string{"*"},
				Routes: []envoyRoute{{
					Match: envoyRouteMatch{Prefix: "/"},
					// A day: a generation streams as long as it takes. The charts' route also has
					// typed_per_filter_config ext_proc: a FilterConfig whose config is an empty Any,
					// which enables a filter the chain already runs on every route: left out
					// (go-control-plane's parser refuses an Any without a type).
					Route: envoyRouteAction{Cluster: originalDstClusterName, Timeout: "86400s", IdleTimeout: "86400s",
						UpgradeConfigs: []envoyUpgradeConfig{{UpgradeType: "websocket"}}},
				}},
			}}},
			HTTPFilters: []envoyHTTPFilter{
				{Name: filterExtProc, TypedConfig: extProc},
				{Name: filterRouter, TypedConfig: envoyRouterFilter{Type: typeRouter, SuppressEnvoyHeaders: true}},
			},
			HTTP2ProtocolOptions:         &envoyHTTP2Options{MaxConcurrentStreams: 100, InitialStreamWindowSize: 65536, InitialConnectionWindowSize: 1048576},
			UseRemoteAddress:             true,
			NormalizePath:                true,
			MergeSlashes:                 true,
			ServerHeaderTransformation:   "PASS_THROUGH",
			CommonHTTPProtocolOptions:    &envoyCommonHTTPOptions{HeadersWithUnderscoresAction: "REJECT_REQUEST"},
			PathWithEscapedSlashesAction: "UNESCAPE_AND_REDIRECT",
			AccessLog:                    []envoyAccessLog{requestLog},
			EarlyHeaderMutations:         []envoyEarlyHeaderMutation{removeHeaders(routedHeaders...)},
		}}}}},
	}
	breakers := &envoyCircuitBreakers{Thresholds: []envoyThreshold{{MaxConnections: 40000, MaxPendingRequests: 40000, MaxRequests: 40000}}}
	extProcBreakers := &envoyCircuitBreakers{Thresholds: []envoyThreshold{{MaxConnections: 40000, MaxPendingRequests: 40000, MaxRequests: 40000, MaxRetries: 1024}}}
	h2 := envoyHTTPProtocolOpts{Type: typeHTTPProtocolOptions}
	h2.ExplicitHTTPConfig.HTTP2ProtocolOptions = envoyHTTP2Options{InitialStreamWindowSize: 65536, InitialConnectionWindowSize: 1048576}
	// Every release's picker serves ext_proc over TLS with a certificate it signs itself
	// (--secure-serving defaults to true: pkg/epp/server/options.go in GIE v1.5.0 and
	// llm-d-router v0.10.0, cmd/epp/runner/runner.go in GIE v1.2.0, pkg/lwepp/server/options.go in
	// v1.6.0), which the render leaves on: the charts' transport socket, nothing verified.
	tls := &envoyTransportSocket{Name: transportSocketTLS, TypedConfig: envoyTLSContext{Type: typeUpstreamTLSContext}}
	tls.TypedConfig.CommonTLSContext.ALPNProtocols = []string{"h2"}
	return envoyBootstrap{
		Admin: envoyAdmin{Address: socketAddress("127.0.0.1", routerProxyAdminPort), AccessLog: []envoyAccessLog{fileLog("/dev/null")}},
		StaticResources: envoyStaticResources{
			Listeners: []envoyListener{ready, serving},
			Clusters: []envoyCluster{
				{Name: statsClusterName, Type: "STATIC", ConnectTimeout: "0.250s", LoadAssignment: staticCluster(statsClusterName, "127.0.0.1", routerProxyAdminPort)},
				{
					// The pod the picker names in the header, as the request's destination.
					Name: originalDstClusterName, Type: "ORIGINAL_DST", ConnectTimeout: "1000s", LBPolicy: "CLUSTER_PROVIDED",
					CircuitBreakers:     breakers,
					OriginalDstLBConfig: &envoyOriginalDstLBConfig{UseHTTPHeader: true, HTTPHeaderName: DestinationEndpointHeader},
				},
				r.extProcCluster(extProcBreakers, tls, h2),
			},
		},
	}
}

// extProcCluster is where the proxy asks which pod serves a request: the picker in its own pod
// first, on its --grpc-port, and while that one fails its health check, the pickers' Service
// (priority 1), so a proxy whose picker died (the container alone: an OOM kill, a crash) sends its
// clients' requests to another picker until the kubelet has restarted its own, instead of
// failing each one closed; its clients' connections stay on it, since its pod left the router
// Service only for new ones (docs/design/0044-a-standalone-door-that-stays-open.md). The charts
// check ext_proc's own port, where no release's picker serves the health service unless
// --health-checking is set (default false in every release's options and neither chart sets
// it), so their check always fails and Envoy routes in panic mode. Here the check asks the health
// port, which every release serves in plaintext (GIE v1.5.0 and llm-d-router v0.10.0
// cmd/epp/runner/runner.go registerHealthServer, GIE v1.2.0 the same, GIE v1.6.0
// pkg/lwepp/server/runserver.go HealthServerRunnable: grpc.NewServer() without credentials) for
// the service the pod's readiness probe asks, and the Service is not checked: kube-proxy sends to
// its Ready pickers only. The Service is named short, so the pod's DNS search path (its own
// namespace first) finds it whatever the cluster's domain.
func (r *routing) extProcCluster(breakers *envoyCircuitBreakers, tls *envoyTransportSocket, h2 envoyHTTPProtocolOpts) envoyCluster {
	const plaintextHealth = "health"
	local := envoyLBEndpoint{}
	local.Endpoint.Address = socketAddress("127.0.0.1", eppGRPCPort)
	local.Endpoint.HealthCheckConfig = &envoyEndpointHealthCheckConf{PortValue: eppGRPCHealthPort}
	service := envoyLBEndpoint{}
	service.Endpoint.Address = socketAddress(api.EndpointPickerName(r.svc.Name), eppGRPCPort)
	service.Endpoint.HealthCheckConfig = &envoyEndpointHealthCheckConf{DisableActiveHealthCheck: true}
	_, readiness := r.release().HealthServices(r.leaderElection())
	check := envoyHealthCheck{
		Timeout: "1s", Interval: extProcHealthInterval, NoTrafficInterval: extProcHealthInterval,
		UnhealthyThreshold: 1, HealthyThreshold: 1,
		TransportSocketMatchCriteria: map[string]string{plaintextHealth: "true"},
	}
	check.GRPCHealthCheck.ServiceName = readiness
	raw := envoyRawBufferSocket{Name: transportSocketRawBuffer}
	raw.TypedConfig.Type = typeRawBuffer
	return envoyCluster{
		Name: extProcClusterName, Type: "STRICT_DNS", ConnectTimeout: "86400s", LBPolicy: "LEAST_REQUEST",
		CircuitBreakers:               breakers,
		TransportSocket:               tls,
		TransportSocketMatches:        []envoyTransportSocketMatch{{Name: plaintextHealth, Match: map[string]string{plaintextHealth: "true"}, TransportSocket: raw}},
		TypedExtensionProtocolOptions: map[string]envoyHTTPProtocolOpts{httpProtocolOptionsKey: h2},
		LoadAssignment: &envoyLoadAssignment{ClusterName: extProcClusterName, Endpoints: []envoyLocalityLBEps{
			{LBEndpoints: []envoyLBEndpoint{local}},
			{LBEndpoints: []envoyLBEndpoint{service}, Priority: 1},
		}},
		HealthChecks: []envoyHealthCheck{check},
	}
}

// ipv6Too is a listener's "::" address beside its 0.0.0.0 one (llm-d's chart's
// additional_addresses), so that the router serves on IPv6 and dual-stack clusters too.
func ipv6Too(port int32) []envoyAdditionalAddress {
	return []envoyAdditionalAddress{{Address: socketAddress("::", port)}}
}

// removeHeaders is an early header mutation that removes the headers from every request before
// any filter sees it.
func removeHeaders(names ...string) envoyEarlyHeaderMutation {
	m := envoyEarlyHeaderMutation{Name: earlyHeaderMutation}
	m.TypedConfig.Type = typeEarlyHeaderMutation
	for _, name := range names {
		m.TypedConfig.Mutations = append(m.TypedConfig.Mutations, envoyHeaderMutation{Remove: name})
	}
	return m
}

// proxyConfigText is the bootstrap as the ConfigMap holds it (YAML, which Envoy reads by the
// file's extension).
func (r *routing) proxyConfigText() (string, error) {
	text, err := yaml.Marshal(r.proxyBootstrap())
	if err != nil {
		return "", fmt.Errorf("the router proxy's Envoy bootstrap: %w", err)
	}
	return string(text), nil
}

func (r *routing) proxyConfigMap(ref Ref) (*corev1.ConfigMap, error) {
	text, err := r.proxyConfigText()
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{TypeMeta: typeMeta(KindConfigMap), ObjectMeta: r.meta(ref), Data: map[string]string{routerProxyConfigFile: text}}, nil
}

// addProxy puts the proxy in the Endpoint Picker's pod: its container first, as the charts do
// (GIE v1.5.0 epplib templates/_deployment.yaml; llm-d-router's routerlib), its bootstrap mounted,
// and the bootstrap's hash on the pod so a new one restarts it.
func (r *routing) addProxy(pod *corev1.PodTemplateSpec) error {
	text, err := r.proxyConfigText()
	if err != nil {
		return err
	}
	hash := sha256.Sum256([]byte(text))
	pod.Annotations = merged(pod.Annotations, map[string]string{annotationProxyConfig: hex.EncodeToString(hash[:])[:revisionLength]})
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	image, resources := routerProxyImage, routerProxyResources()
	if settings := r.proxySettings(); settings != nil {
		image = cmp.Or(settings.Image, image)
		if settings.Resources != nil {
			resources = *settings.Resources.DeepCopy()
		}
	}
	proxy := corev1.Container{
		Name:            routerProxyContainerName,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"envoy"},
		Args:            routerProxyArgs,
		Env:             []corev1.EnvVar{fieldEnv("NS_NAME", "metadata.namespace"), fieldEnv("POD_NAME", "metadata.name")},
		Ports: []corev1.ContainerPort{
			{Name: "http-" + strconv.Itoa(RouterProxyPort), ContainerPort: RouterProxyPort, Protocol: corev1.ProtocolTCP},
			{Name: routerProxyMetricsPortName, ContainerPort: routerProxyReadyPort, Protocol: corev1.ProtocolTCP},
		},
		Resources: resources,
		// The charts' probe, but that it takes three failures, not one: a single slow answer of
		// a busy proxy must not take a door out of the Service. A stopping pod leaves the
		// Service as it begins terminating, and a proxy that exits is not Ready, whatever the probe.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(routerProxyReadyPort), Scheme: corev1.URISchemeHTTP}},
			FailureThreshold: 3, PeriodSeconds: 5, SuccessThreshold: 1, TimeoutSeconds: 2,
		},
		Lifecycle:    proxyDrainHook(),
		VolumeMounts: []corev1.VolumeMount{{Name: routerProxyConfigVol, MountPath: routerProxyConfigDir, ReadOnly: true}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == eppContainerName {
			pod.Spec.Containers[i].Lifecycle = pickerDrainWait()
		}
	}
	pod.Spec.Containers = append([]corev1.Container{proxy}, pod.Spec.Containers...)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: routerProxyConfigVol, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: api.RouterProxyConfigName(r.svc.Name)},
			Items:                []corev1.KeyToPath{{Key: routerProxyConfigFile, Path: routerProxyConfigFile}},
		},
	}})
	return nil
}

// proxySettings are the user's settings of the proxy, nil for none.
func (r *routing) proxySettings() *api.RouterProxy {
	if r.router.EndpointPicker == nil {
		return nil
	}
	return r.router.EndpointPicker.Proxy
}

// routerService is the Service clients call: one port, the proxy's, which speaks the model
// servers' OpenAI-compatible HTTP.
func (r *routing) routerService(ref Ref) *corev1.Service {
	return r.pickerPodService(ref, corev1.ServicePort{
		Name: routerServicePortName, Port: RouterProxyPort, TargetPort: intstr.FromInt32(RouterProxyPort),
		Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http"),
	})
}

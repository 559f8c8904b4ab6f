// SPDX-License-Identifier: Apache-2.0

package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

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
// chart: v1.6.0 removed config/charts). Both carry the same Envoy bootstrap; where they differ the
// comment says which is followed.

// Suffixes of a standalone router's objects.
const (
	suffixRouterProxyConfig = "router-proxy-config"
	suffixRouterService     = "router-service"
)

// The proxy's container, ports and files.
const (
	// routerProxyImage: both charts' values.yaml (sidecar.image; presets.envoy.image).
	routerProxyImage         = "docker.io/envoyproxy/envoy:distroless-v1.33.2"
	routerProxyContainerName = "envoy-proxy" // llm-d-router's preset name (GIE's: envoy-sidecar)
	// RouterProxyPort is the proxy's listener and the router Service's one port: both charts'
	// listener "vllm" and container port http-8081.
	RouterProxyPort = 8081
	// routerProxyReadyPort serves /ready (Envoy's health_check filter) and /stats/prometheus:
	// both charts' listener envoy-proxy-ready-0.0.0.0-19001, container port metrics-19001.
	routerProxyReadyPort = 19001
	// routerProxyAdminPort is Envoy's admin interface, on loopback only (both charts' admin).
	routerProxyAdminPort   = 19000
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
	"--drain-time-s", "60",
	"-c", routerProxyConfigDir + "/" + routerProxyConfigFile,
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
	// The listener's access log: only requests no route matched (response flag NR); Envoy's
	// default format where the charts elide theirs ("...").
	noRouteLog := fileLog("/dev/stdout")
	noRouteLog.Filter = &envoyAccessLogFltr{}
	noRouteLog.Filter.ResponseFlagFilter.Flags = []string{"NR"}
	readyHeader := envoyHeaderMatch{Name: ":path"}
	readyHeader.StringMatch.Exact = "/ready"
	ready := envoyListener{
		Name:    "envoy-proxy-ready-0.0.0.0-" + strconv.Itoa(routerProxyReadyPort),
		Address: socketAddress("0.0.0.0", routerProxyReadyPort),
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
		// The pool's failureMode, as llm-d-router's chart maps router.proxy.failOpen
		// (_helpers.tpl llm-d-router.proxy.failOpen, false for a sidecar): FailOpen lets a request
		// through to the address it names when the picker does not answer.
		FailureModeAllow: r.router.PoolFailureMode() == api.FailOpen,
		ProcessingMode: envoyProcessingMode{
			RequestHeaderMode: "SEND", ResponseHeaderMode: "SEND",
			RequestBodyMode: "FULL_DUPLEX_STREAMED", ResponseBodyMode: "FULL_DUPLEX_STREAMED",
			RequestTrailerMode: "SEND", ResponseTrailerMode: "SEND",
		},
		MessageTimeout: "1000s",
	}
	extProc.GRPCService.EnvoyGRPC.ClusterName = extProcClusterName
	extProc.GRPCService.EnvoyGRPC.Authority = "localhost:" + strconv.Itoa(eppGRPCPort)
	extProc.GRPCService.Timeout = "10s"
	serving := envoyListener{
		Name:                          "vllm",
		Address:                       socketAddress("0.0.0.0", RouterProxyPort),
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
			AccessLog:                    []envoyAccessLog{fileLog("/dev/stdout")},
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
				{
					// The picker in the same pod, on its --grpc-port. The charts' active gRPC health
					// check is left out: no release's picker serves the health service on that port
					// unless --health-checking is set (default false in the options files above,
					// and neither chart sets it), so the check would fail and Envoy route in panic
					// mode regardless; with one local endpoint there is nothing to choose between.
					Name: extProcClusterName, Type: "STATIC", ConnectTimeout: "86400s", LBPolicy: "LEAST_REQUEST",
					CircuitBreakers:               extProcBreakers,
					TransportSocket:               tls,
					TypedExtensionProtocolOptions: map[string]envoyHTTPProtocolOpts{httpProtocolOptionsKey: h2},
					LoadAssignment:                staticCluster(extProcClusterName, "127.0.0.1", eppGRPCPort),
				},
			},
		},
	}
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
	proxy := corev1.Container{
		Name:            routerProxyContainerName,
		Image:           routerProxyImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"envoy"},
		Args:            routerProxyArgs,
		Env:             []corev1.EnvVar{fieldEnv("NS_NAME", "metadata.namespace"), fieldEnv("POD_NAME", "metadata.name")},
		Ports: []corev1.ContainerPort{
			{Name: "http-" + strconv.Itoa(RouterProxyPort), ContainerPort: RouterProxyPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics-" + strconv.Itoa(routerProxyReadyPort), ContainerPort: routerProxyReadyPort, Protocol: corev1.ProtocolTCP},
		},
		// GIE's chart's requests (llm-d-router's sidecar preset sets none).
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
		}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(routerProxyReadyPort), Scheme: corev1.URISchemeHTTP}},
			FailureThreshold: 1, PeriodSeconds: 5, SuccessThreshold: 1, TimeoutSeconds: 1,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: routerProxyConfigVol, MountPath: routerProxyConfigDir, ReadOnly: true}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
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

// routerService is the Service clients call: one port, the proxy's, which speaks the model
// servers' OpenAI-compatible HTTP.
func (r *routing) routerService(ref Ref) *corev1.Service {
	return r.pickerPodService(ref, corev1.ServicePort{
		Name: routerServicePortName, Port: RouterProxyPort, TargetPort: intstr.FromInt32(RouterProxyPort),
		Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http"),
	})
}

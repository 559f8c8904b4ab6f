// SPDX-License-Identifier: Apache-2.0

package render

import (
	"strconv"
	"time"
)

// envoyDuration is a duration in whole seconds as Envoy's JSON ("1000s") and the Gateway API's
// Duration (GEP-2257) both read it.
func envoyDuration(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }

// The Envoy bootstrap of a standalone router's proxy, as a small typed struct of our own whose JSON
// is Envoy's (envoy.config.bootstrap.v3.Bootstrap in proto3 JSON, snake_case names): the core links
// no go-control-plane, the tests parse the rendered text into go-control-plane's typed Bootstrap and
// run its ValidateAll (standalone_test.go). Only the fields the proxy uses are declared.

// The type URLs of the typed configurations the bootstrap names.
const (
	typeHTTPConnectionManager = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	typeExtProc               = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor"
	typeRouter                = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	typeHealthCheckFilter     = "type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck"
	typeFileAccessLog         = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
	typeUpstreamTLSContext    = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
	typeHTTPProtocolOptions   = "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	typeEarlyHeaderMutation   = "type.googleapis.com/envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation"
	typeRawBuffer             = "type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"
)

// The extension names Envoy knows the filters and sockets by.
const (
	filterHTTPConnectionManager = "envoy.filters.network.http_connection_manager"
	filterExtProc               = "envoy.filters.http.ext_proc"
	filterRouter                = "envoy.filters.http.router"
	filterHealthCheck           = "envoy.filters.http.health_check"
	accessLoggerFile            = "envoy.access_loggers.file"
	transportSocketTLS          = "envoy.transport_sockets.tls"
	transportSocketRawBuffer    = "envoy.transport_sockets.raw_buffer"
	httpProtocolOptionsKey      = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	earlyHeaderMutation         = "envoy.http.early_header_mutation.header_mutation"
)

type envoyBootstrap struct {
	Admin           envoyAdmin           `json:"admin"`
	StaticResources envoyStaticResources `json:"static_resources"`
}

type envoyAdmin struct {
	Address   envoyAddress     `json:"address"`
	AccessLog []envoyAccessLog `json:"access_log,omitempty"`
}

type envoyStaticResources struct {
	Listeners []envoyListener `json:"listeners"`
	Clusters  []envoyCluster  `json:"clusters"`
}

type envoyAddress struct {
	SocketAddress envoySocketAddress `json:"socket_address"`
}

type envoySocketAddress struct {
	Address   string `json:"address"`
	PortValue int32  `json:"port_value"`
}

type envoyListener struct {
	Name                          string                   `json:"name"`
	Address                       envoyAddress             `json:"address"`
	AdditionalAddresses           []envoyAdditionalAddress `json:"additional_addresses,omitempty"`
	PerConnectionBufferLimitBytes int                      `json:"per_connection_buffer_limit_bytes,omitempty"`
	AccessLog                     []envoyAccessLog         `json:"access_log,omitempty"`
	FilterChains                  []envoyFilterChain       `json:"filter_chains"`
}

type envoyAdditionalAddress struct {
	Address envoyAddress `json:"address"`
}

type envoyFilterChain struct {
	Name    string        `json:"name,omitempty"`
	Filters []envoyFilter `json:"filters"`
}

type envoyFilter struct {
	Name        string                     `json:"name"`
	TypedConfig envoyHTTPConnectionManager `json:"typed_config"`
}

type envoyHTTPConnectionManager struct {
	Type                         string                  `json:"@type"`
	StatPrefix                   string                  `json:"stat_prefix"`
	RouteConfig                  envoyRouteConfig        `json:"route_config"`
	HTTPFilters                  []envoyHTTPFilter       `json:"http_filters"`
	HTTP2ProtocolOptions         *envoyHTTP2Options      `json:"http2_protocol_options,omitempty"`
	UseRemoteAddress             bool                    `json:"use_remote_address,omitempty"`
	NormalizePath                bool                    `json:"normalize_path,omitempty"`
	MergeSlashes                 bool                    `json:"merge_slashes,omitempty"`
	ServerHeaderTransformation   string                  `json:"server_header_transformation,omitempty"`
	CommonHTTPProtocolOptions    *envoyCommonHTTPOptions `json:"common_http_protocol_options,omitempty"`
	PathWithEscapedSlashesAction string                  `json:"path_with_escaped_slashes_action,omitempty"`
	AccessLog                    []envoyAccessLog        `json:"access_log,omitempty"`
	// EarlyHeaderMutations run on a request's headers before any filter or route sees them.
	EarlyHeaderMutations []envoyEarlyHeaderMutation `json:"early_header_mutation_extensions,omitempty"`
}

type envoyEarlyHeaderMutation struct {
	Name        string `json:"name"`
	TypedConfig struct {
		Type      string                `json:"@type"`
		Mutations []envoyHeaderMutation `json:"mutations"`
	} `json:"typed_config"`
}

// envoyHeaderMutation is one envoy.config.common.mutation_rules.v3.HeaderMutation: a header to remove.
type envoyHeaderMutation struct {
	Remove string `json:"remove"`
}

type envoyHTTP2Options struct {
	MaxConcurrentStreams        int `json:"max_concurrent_streams,omitempty"`
	InitialStreamWindowSize     int `json:"initial_stream_window_size,omitempty"`
	InitialConnectionWindowSize int `json:"initial_connection_window_size,omitempty"`
}

type envoyCommonHTTPOptions struct {
	HeadersWithUnderscoresAction string `json:"headers_with_underscores_action"`
}

type envoyAccessLog struct {
	Name        string              `json:"name"`
	TypedConfig envoyFileAccessLog  `json:"typed_config"`
	Filter      *envoyAccessLogFltr `json:"filter,omitempty"`
}

type envoyFileAccessLog struct {
	Type      string          `json:"@type"`
	Path      string          `json:"path"`
	LogFormat *envoyLogFormat `json:"log_format,omitempty"`
}

// envoyLogFormat is a SubstitutionFormatString of JSON: each key's value is a command operator.
type envoyLogFormat struct {
	JSONFormat map[string]string `json:"json_format"`
}

type envoyAccessLogFltr struct {
	ResponseFlagFilter struct {
		Flags []string `json:"flags"`
	} `json:"response_flag_filter"`
}

type envoyRouteConfig struct {
	Name         string             `json:"name"`
	VirtualHosts []envoyVirtualHost `json:"virtual_hosts"`
}

type envoyVirtualHost struct {
	Name    string       `json:"name"`
	Domains []string     `json:"domains"`
	Routes  []envoyRoute `json:"routes"`
}

type envoyRoute struct {
	Match envoyRouteMatch  `json:"match"`
	Route envoyRouteAction `json:"route"`
}

type envoyRouteMatch struct {
	Prefix string `json:"prefix"`
}

type envoyRouteAction struct {
	Cluster        string               `json:"cluster"`
	Timeout        string               `json:"timeout,omitempty"`
	IdleTimeout    string               `json:"idle_timeout,omitempty"`
	UpgradeConfigs []envoyUpgradeConfig `json:"upgrade_configs,omitempty"`
}

type envoyUpgradeConfig struct {
	UpgradeType string `json:"upgrade_type"`
}

// envoyHTTPFilter is an HTTP filter; TypedConfig is one of the filter configurations below.
type envoyHTTPFilter struct {
	Name        string `json:"name"`
	TypedConfig any    `json:"typed_config"`
}

type envoyExtProc struct {
	Type             string              `json:"@type"`
	FailureModeAllow bool                `json:"failure_mode_allow"`
	GRPCService      envoyGRPCService    `json:"grpc_service"`
	ProcessingMode   envoyProcessingMode `json:"processing_mode"`
	MessageTimeout   string              `json:"message_timeout"`
}

type envoyGRPCService struct {
	EnvoyGRPC struct {
		ClusterName string `json:"cluster_name"`
		Authority   string `json:"authority"`
	} `json:"envoy_grpc"`
	Timeout string `json:"timeout"`
}

type envoyProcessingMode struct {
	RequestHeaderMode   string `json:"request_header_mode"`
	ResponseHeaderMode  string `json:"response_header_mode"`
	RequestBodyMode     string `json:"request_body_mode"`
	ResponseBodyMode    string `json:"response_body_mode"`
	RequestTrailerMode  string `json:"request_trailer_mode"`
	ResponseTrailerMode string `json:"response_trailer_mode"`
}

type envoyRouterFilter struct {
	Type                 string `json:"@type"`
	SuppressEnvoyHeaders bool   `json:"suppress_envoy_headers,omitempty"`
}

type envoyHealthCheckFilter struct {
	Type            string             `json:"@type"`
	PassThroughMode bool               `json:"pass_through_mode"`
	Headers         []envoyHeaderMatch `json:"headers"`
}

type envoyHeaderMatch struct {
	Name        string `json:"name"`
	StringMatch struct {
		Exact string `json:"exact"`
	} `json:"string_match"`
}

type envoyCluster struct {
	Name                          string                           `json:"name"`
	Type                          string                           `json:"type"`
	ConnectTimeout                string                           `json:"connect_timeout"`
	LBPolicy                      string                           `json:"lb_policy,omitempty"`
	CircuitBreakers               *envoyCircuitBreakers            `json:"circuit_breakers,omitempty"`
	OriginalDstLBConfig           *envoyOriginalDstLBConfig        `json:"original_dst_lb_config,omitempty"`
	TransportSocket               *envoyTransportSocket            `json:"transport_socket,omitempty"`
	TransportSocketMatches        []envoyTransportSocketMatch      `json:"transport_socket_matches,omitempty"`
	TypedExtensionProtocolOptions map[string]envoyHTTPProtocolOpts `json:"typed_extension_protocol_options,omitempty"`
	LoadAssignment                *envoyLoadAssignment             `json:"load_assignment,omitempty"`
	HealthChecks                  []envoyHealthCheck               `json:"health_checks,omitempty"`
}

// envoyTransportSocketMatch is a transport socket for the connections whose criteria match: an
// endpoint's metadata, or a health check's transport_socket_match_criteria.
type envoyTransportSocketMatch struct {
	Name            string               `json:"name"`
	Match           map[string]string    `json:"match"`
	TransportSocket envoyRawBufferSocket `json:"transport_socket"`
}

// envoyRawBufferSocket is plaintext.
type envoyRawBufferSocket struct {
	Name        string `json:"name"`
	TypedConfig struct {
		Type string `json:"@type"`
	} `json:"typed_config"`
}

// envoyHealthCheck is an active gRPC health check of a cluster's hosts (envoy.config.core.v3.HealthCheck).
type envoyHealthCheck struct {
	Timeout                      string            `json:"timeout"`
	Interval                     string            `json:"interval"`
	NoTrafficInterval            string            `json:"no_traffic_interval,omitempty"`
	UnhealthyThreshold           uint32            `json:"unhealthy_threshold"`
	HealthyThreshold             uint32            `json:"healthy_threshold"`
	TransportSocketMatchCriteria map[string]string `json:"transport_socket_match_criteria,omitempty"`
	GRPCHealthCheck              struct {
		ServiceName string `json:"service_name"`
	} `json:"grpc_health_check"`
}

type envoyCircuitBreakers struct {
	Thresholds []envoyThreshold `json:"thresholds"`
}

type envoyThreshold struct {
	MaxConnections     int `json:"max_connections"`
	MaxPendingRequests int `json:"max_pending_requests"`
	MaxRequests        int `json:"max_requests"`
	MaxRetries         int `json:"max_retries,omitempty"`
}

type envoyOriginalDstLBConfig struct {
	UseHTTPHeader  bool   `json:"use_http_header"`
	HTTPHeaderName string `json:"http_header_name"`
}

type envoyTransportSocket struct {
	Name        string          `json:"name"`
	TypedConfig envoyTLSContext `json:"typed_config"`
}

// envoyTLSContext is an UpstreamTlsContext that verifies nothing: the picker serves a self-signed
// certificate it makes at start-up, on loopback.
type envoyTLSContext struct {
	Type             string `json:"@type"`
	CommonTLSContext struct {
		ALPNProtocols []string `json:"alpn_protocols"`
	} `json:"common_tls_context"`
}

type envoyHTTPProtocolOpts struct {
	Type               string `json:"@type"`
	ExplicitHTTPConfig struct {
		HTTP2ProtocolOptions envoyHTTP2Options `json:"http2_protocol_options"`
	} `json:"explicit_http_config"`
}

type envoyLoadAssignment struct {
	ClusterName string               `json:"cluster_name"`
	Endpoints   []envoyLocalityLBEps `json:"endpoints"`
}

type envoyLocalityLBEps struct {
	LBEndpoints []envoyLBEndpoint `json:"lb_endpoints"`
	// Priority: Envoy sends to the lowest level whose hosts are healthy, to the next as they fail.
	Priority uint32 `json:"priority,omitempty"`
}

type envoyLBEndpoint struct {
	Endpoint struct {
		Address           envoyAddress                  `json:"address"`
		HealthCheckConfig *envoyEndpointHealthCheckConf `json:"health_check_config,omitempty"`
	} `json:"endpoint"`
}

// envoyEndpointHealthCheckConf: where the cluster's active health check asks this endpoint, or
// that it is not checked (and so always healthy).
type envoyEndpointHealthCheckConf struct {
	PortValue                uint32 `json:"port_value,omitempty"`
	DisableActiveHealthCheck bool   `json:"disable_active_health_check,omitempty"`
}

func socketAddress(address string, port int32) envoyAddress {
	return envoyAddress{SocketAddress: envoySocketAddress{Address: address, PortValue: port}}
}

func staticCluster(name, address string, port int32) *envoyLoadAssignment {
	endpoint := envoyLBEndpoint{}
	endpoint.Endpoint.Address = socketAddress(address, port)
	return &envoyLoadAssignment{ClusterName: name, Endpoints: []envoyLocalityLBEps{{LBEndpoints: []envoyLBEndpoint{endpoint}}}}
}

// SPDX-License-Identifier: Apache-2.0

// Command envoy-standin stands for a standalone router's Envoy sidecar in the test cluster: it
// reads the Envoy bootstrap the container is given (-c) and runs the test gateway as that
// bootstrap configures Envoy: on its serving listener's port, sending ext_proc to the cluster its
// ext_proc filter names (address, port, TLS or not), with its message timeout and
// failure_mode_allow, routing to the address the picker names in the header the
// original-destination cluster reads, after removing the headers its early header mutation
// removes; and answering /ready on the listener of the health_check filter. A listener's
// additional addresses ("::") are not served (the suite's pods have IPv4 addresses only), and
// access logs are the stand-in's own records. What the gateway cannot do as the bootstrap asks
// (another processing mode, another header) is refused at start, so the stand-in never runs a
// configuration Envoy would run differently. Envoy's other flags are accepted and ignored.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/metadata"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/featurespace"
)

// RecordPrefix starts each line of the log that is a request's gateway.Record in JSON.
const RecordPrefix = "request:"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "envoy-standin:", err)
		os.Exit(1)
	}
}

// portMap is --listen-port CONTAINER=LOOPBACK, repeated: where the test cluster gives each of the
// container's ports a loopback port of its own (tests/cluster containers.go).
type portMap map[uint32]int

func (m portMap) String() string { return fmt.Sprint(map[uint32]int(m)) }
func (m portMap) Set(v string) error {
	from, to, ok := strings.Cut(v, "=")
	f, err1 := strconv.ParseUint(from, 10, 32)
	t, err2 := strconv.Atoi(to)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("want CONTAINERPORT=LOOPBACKPORT, got %q", v)
	}
	m[uint32(f)] = t
	return nil
}

func run() error {
	config := flag.String("c", "", "the Envoy bootstrap (Envoy's -c)")
	flag.String("config-path", "", "Envoy's --config-path")
	flag.String("service-node", "", "ignored (Envoy's)")
	flag.String("log-level", "", "ignored (Envoy's)")
	flag.Bool("cpuset-threads", false, "ignored (Envoy's)")
	drainStrategy := flag.String("drain-strategy", "gradual", "Envoy's: the stand-in drains immediate only")
	drainTime := flag.Int("drain-time-s", 600, "Envoy's: how long a graceful drain lasts (its default 600)")
	serveAdmin := flag.Bool("serve-admin", false, "serve the bootstrap's admin interface (its drain calls) on its port at the --loopback address")
	ports := portMap{}
	flag.Var(ports, "listen-port", "CONTAINERPORT=LOOPBACKPORT: where a listener of the bootstrap listens (repeated)")
	loopback := flag.String("loopback", "127.0.0.1", "the address that stands for the pod's loopback in the bootstrap's clusters")
	kubeconfig := flag.String("cluster-kubeconfig", "", "the cluster's, for resolving a Service name as its DNS and kube-proxy would")
	namespace := flag.String("namespace", "", "the pod's namespace, where a Service's short name resolves")
	flag.Parse()
	if *config == "" {
		*config = flag.Lookup("config-path").Value.String()
	}
	text, err := os.ReadFile(*config)
	if err != nil {
		return err
	}
	b, err := featurespace.ParseEnvoyBootstrap(string(text))
	if err != nil {
		return fmt.Errorf("%s: %w", *config, err)
	}
	managers, err := featurespace.EnvoyListenerManagers(b)
	if err != nil {
		return err
	}
	var gw *gateway.Gateway
	var servingStatPrefix string // the serving connection manager's, for the admin's stats
	var healthFailed atomic.Bool
	for port, hcms := range managers {
		if len(hcms) != 1 {
			return fmt.Errorf("listener port %d: %d HTTP connection managers, the stand-in serves one", port, len(hcms))
		}
		loopbackPort, ok := ports[port]
		if !ok {
			return fmt.Errorf("listener port %d: no --listen-port for it", port)
		}
		listen := "127.0.0.1:" + strconv.Itoa(loopbackPort)
		ep, err := featurespace.EnvoyExtProc(hcms[0])
		if err != nil {
			return err
		}
		if ep == nil {
			if err := serveReady(hcms[0], listen, &healthFailed, b.GetStaticResources().GetClusters(), *loopback); err != nil {
				return fmt.Errorf("listener port %d: %w", port, err)
			}
			continue
		}
		servingStatPrefix = hcms[0].GetStatPrefix()
		opts, failover, err := gatewayOptions(b.GetStaticResources().GetClusters(), hcms[0], ep, *loopback)
		if err != nil {
			return fmt.Errorf("listener port %d: %w", port, err)
		}
		opts.Listen = listen
		opts.Recorded = func(r gateway.Record) {
			// One line a request, for the suite's tests: what the picker picked and who served it.
			line, _ := json.Marshal(r)
			fmt.Printf("%s %s\n", RecordPrefix, line)
		}
		if gw, err = gateway.Start(context.Background(), nil, nil, opts); err != nil {
			return err
		}
		fmt.Printf("listener %d on %s: ext_proc to %s (plaintext %v), message timeout %s, fail open %v\n",
			port, gw.URL, opts.EPP, opts.PlaintextEPP, opts.MessageTimeout, opts.FailOpen)
		if failover != nil {
			if *kubeconfig == "" || *namespace == "" {
				return fmt.Errorf("the ext_proc cluster fails over to Service %s: --cluster-kubeconfig and --namespace resolve it", failover.fallback)
			}
			clients, err := clusterClients(*kubeconfig)
			if err != nil {
				return err
			}
			if err := failover.run(context.Background(), gw, clients, *namespace); err != nil {
				return err
			}
			fmt.Printf("ext_proc fails over to Service %s:%d while %s fails gRPC health %q (every %s)\n",
				failover.fallback, failover.fallbackPort, failover.health, failover.serviceName, failover.interval)
		}
	}
	if gw == nil {
		return fmt.Errorf("%s: no listener with an ext_proc filter", *config)
	}
	if *serveAdmin {
		if *drainStrategy != "immediate" {
			return fmt.Errorf("--drain-strategy %s: the stand-in drains as immediate does only", *drainStrategy)
		}
		port := strconv.Itoa(int(b.GetAdmin().GetAddress().GetSocketAddress().GetPortValue()))
		l, err := net.Listen("tcp", net.JoinHostPort(*loopback, port))
		if err != nil {
			return err
		}
		admin := adminHandler(gw, servingStatPrefix, &healthFailed, time.Duration(*drainTime)*time.Second)
		go func() { _ = http.Serve(l, admin) }() //nolint:gosec // a test program on loopback
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	gw.Close()
	return nil
}

// gatewayOptions are the gateway's settings from the serving listener's connection manager and
// ext_proc filter and the clusters they name.
func gatewayOptions(clusters []*clusterv3.Cluster, hcm *hcmv3.HttpConnectionManager, ep *extprocv3.ExternalProcessor, loopback string) (gateway.Options, *extProcFailover, error) {
	var opts gateway.Options
	// The gateway sends the headers, then the whole body (end_of_stream), and passes the response
	// headers and body through the picker as they come: ext_proc's SEND and FULL_DUPLEX_STREAMED.
	mode := ep.GetProcessingMode()
	if mode.GetRequestHeaderMode().String() != "SEND" || mode.GetResponseHeaderMode().String() != "SEND" ||
		mode.GetRequestBodyMode().String() != "FULL_DUPLEX_STREAMED" || mode.GetResponseBodyMode().String() != "FULL_DUPLEX_STREAMED" {
		return opts, nil, fmt.Errorf("ext_proc processing mode %v: the gateway speaks headers SEND and bodies FULL_DUPLEX_STREAMED only", mode)
	}
	opts.MessageTimeout = ep.GetMessageTimeout().AsDuration()
	if opts.MessageTimeout == 0 {
		opts.MessageTimeout = 200 * time.Millisecond // ext_proc.proto: message_timeout defaults to 200 ms
	}
	opts.FailOpen = ep.GetFailureModeAllow()
	// The headers the connection manager removes before any filter (early header mutation).
	removes, err := featurespace.EnvoyRemovedHeaders(hcm)
	if err != nil {
		return opts, nil, err
	}
	opts.RemoveHeaders = removes
	name := ep.GetGrpcService().GetEnvoyGrpc().GetClusterName()
	extProc := clusterNamed(clusters, name)
	if extProc == nil {
		return opts, nil, fmt.Errorf("the ext_proc filter's cluster %q is not in the bootstrap", name)
	}
	eps := extProc.GetLoadAssignment().GetEndpoints()
	if len(eps) == 0 || eps[0].GetPriority() != 0 || len(eps[0].GetLbEndpoints()) != 1 {
		return opts, nil, fmt.Errorf("ext_proc cluster %s: the stand-in sends to one endpoint of priority 0 (and fails over)", name)
	}
	sa := eps[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	host := sa.GetAddress()
	if host == "127.0.0.1" || host == "::1" || host == "localhost" {
		host = loopback
	}
	opts.EPP = net.JoinHostPort(host, strconv.Itoa(int(sa.GetPortValue())))
	failover, err := failoverOf(extProc, opts.EPP)
	if err != nil {
		return opts, nil, err
	}
	switch ts := extProc.GetTransportSocket(); {
	case ts == nil:
		opts.PlaintextEPP = true
	case ts.GetName() != "envoy.transport_sockets.tls":
		return opts, nil, fmt.Errorf("ext_proc cluster %s: transport socket %s, the stand-in speaks TLS or plaintext", name, ts.GetName())
	}
	// Every route must go to an original-destination cluster reading the picker's header.
	for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			c := clusterNamed(clusters, r.GetRoute().GetCluster())
			if c == nil || c.GetType() != clusterv3.Cluster_ORIGINAL_DST {
				return opts, nil, fmt.Errorf("route %s: cluster %q is not an ORIGINAL_DST cluster", r.GetMatch().GetPrefix(), r.GetRoute().GetCluster())
			}
			lb := c.GetOriginalDstLbConfig()
			if !lb.GetUseHttpHeader() || !strings.EqualFold(lb.GetHttpHeaderName(), metadata.DestinationEndpointKey) {
				return opts, nil, fmt.Errorf("cluster %s routes by header %q (use_http_header %v), the gateway by %s",
					c.GetName(), lb.GetHttpHeaderName(), lb.GetUseHttpHeader(), metadata.DestinationEndpointKey)
			}
		}
	}
	return opts, failover, nil
}

func clusterNamed(clusters []*clusterv3.Cluster, name string) *clusterv3.Cluster {
	for _, c := range clusters {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// serveReady serves a listener of Envoy's health_check filter: 200 to a request whose headers
// match the filter's (":path" for the path), as the filter answers when not in pass-through mode
// and the server is not draining. Another request goes on to the router filter: a route of the
// connection manager whose prefix it has, to a static cluster on the pod's loopback (the
// bootstrap's /stats/prometheus to the admin interface), is sent there; else 404, as Envoy's
// router answers a request no route matches.
func serveReady(hcm *hcmv3.HttpConnectionManager, listen string, healthFailed *atomic.Bool, clusters []*clusterv3.Cluster, loopback string) error {
	var hc *healthcheckv3.HealthCheck
	for _, f := range hcm.GetHttpFilters() {
		var c healthcheckv3.HealthCheck
		if a := f.GetTypedConfig(); a != nil && a.MessageIs(&c) {
			if err := a.UnmarshalTo(&c); err != nil {
				return err
			}
			hc = &c
		}
	}
	if hc == nil {
		return fmt.Errorf("neither an ext_proc nor a health_check filter")
	}
	if hc.GetPassThroughMode().GetValue() {
		return fmt.Errorf("health_check in pass-through mode: the stand-in has no upstream to pass to")
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	routes := loopbackRoutes(hcm, clusters, loopback)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range hc.GetHeaders() {
			value := r.Header.Get(h.GetName())
			if h.GetName() == ":path" {
				value = r.URL.Path
			}
			if exact := h.GetStringMatch().GetExact(); value != exact {
				for prefix, upstream := range routes {
					if strings.HasPrefix(r.URL.Path, prefix) {
						upstream.ServeHTTP(w, r)
						return
					}
				}
				http.NotFound(w, r)
				return
			}
		}
		if healthFailed.Load() { // the health_check filter fails while the server is failed
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	go func() { _ = http.Serve(l, handler) }() //nolint:gosec // a test program on loopback
	return nil
}

// loopbackRoutes are a connection manager's prefix routes to a static cluster whose endpoint is
// on the pod's loopback (127.0.0.1, which the stand-in's --loopback address stands for), each a
// proxy to it.
func loopbackRoutes(hcm *hcmv3.HttpConnectionManager, clusters []*clusterv3.Cluster, loopback string) map[string]http.Handler {
	routes := map[string]http.Handler{}
	for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
		for _, route := range vh.GetRoutes() {
			prefix, name := route.GetMatch().GetPrefix(), route.GetRoute().GetCluster()
			if prefix == "" || name == "" {
				continue
			}
			for _, c := range clusters {
				for _, eps := range c.GetLoadAssignment().GetEndpoints() {
					for _, lb := range eps.GetLbEndpoints() {
						if sa := lb.GetEndpoint().GetAddress().GetSocketAddress(); c.GetName() == name && sa.GetAddress() == "127.0.0.1" {
							target := &url.URL{Scheme: "http", Host: net.JoinHostPort(loopback, strconv.Itoa(int(sa.GetPortValue())))}
							routes[prefix] = httputil.NewSingleHostReverseProxy(target)
						}
					}
				}
			}
		}
	}
	return routes
}

// adminHandler is the part of Envoy's admin interface a stopping pod's drain hook uses
// (core/render standalone.go proxyDrainHook; Envoy's docs, operations/admin): POST
// /healthcheck/fail fails the health_check filter (the ready listener answers 503) and
// /healthcheck/ok restores it; POST /drain_listeners drains the serving listener, gracefully for
// drainTime with ?graceful (gateway.Drain), else at once. Envoy refuses a mutation asked by GET;
// so does the stand-in. GET /stats/prometheus answers with the one statistic the stand-in keeps:
// the serving connection manager's downstream_rq_total (Envoy's docs,
// configuration/http/http_conn_man/stats; its Prometheus name and tag as /stats/prometheus
// gives them), the requests it has answered. Other endpoints are not served.
func adminHandler(gw *gateway.Gateway, statPrefix string, healthFailed *atomic.Bool, drainTime time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats/prometheus", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = fmt.Fprintf(w, "# TYPE envoy_http_downstream_rq_total counter\nenvoy_http_downstream_rq_total{envoy_http_conn_manager_prefix=%q} %d\n",
			statPrefix, len(gw.Records()))
	})
	mutation := func(do func(r *http.Request)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.Error(w, "This endpoint requires POST", http.StatusMethodNotAllowed)
				return
			}
			do(r)
			_, _ = fmt.Fprintln(w, "OK")
		}
	}
	mux.HandleFunc("/healthcheck/fail", mutation(func(*http.Request) { healthFailed.Store(true) }))
	mux.HandleFunc("/healthcheck/ok", mutation(func(*http.Request) { healthFailed.Store(false) }))
	mux.HandleFunc("/drain_listeners", mutation(func(r *http.Request) {
		if r.URL.Query().Has("graceful") {
			gw.Drain(drainTime)
		} else {
			gw.Drain(0)
		}
	}))
	return mux
}

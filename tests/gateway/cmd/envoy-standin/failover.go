// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// The ext_proc cluster's priorities, as Envoy follows them (its docs: intro/arch_overview/
// upstream/load_balancing/priority and health_checking): requests go to the priority-0 host
// while its active health check passes, and to priority 1 while it fails. The cluster the stand-in
// follows has one host each: the pod's own picker, checked by gRPC health on a port of its own,
// and a Service name, not checked (disable_active_health_check: always healthy). The stand-in has
// neither the cluster's DNS nor kube-proxy: it resolves the Service as they would take it, to the
// Ready endpoints of its EndpointSlices in the pod's namespace (the search path's first domain),
// and sends to all of them (kube-proxy sends each of Envoy's connections to one Ready endpoint).
// Before the first check passes the host is unhealthy, as Envoy marks a host its active health
// check has not yet passed. With no Ready endpoint behind the Service, requests go to priority 0
// and fail there, as a connection to a Service of no endpoint does.

// extProcFailover is the ext_proc cluster's health check and second priority.
type extProcFailover struct {
	local, health string // the picker's ext_proc and health check addresses, host:port
	serviceName   string // the gRPC health service the check asks
	interval      time.Duration
	timeout       time.Duration
	unhealthy     uint32 // failed checks that make the host unhealthy (unhealthy_threshold)
	healthy       uint32 // passed checks that make it healthy again (healthy_threshold)
	// fallback is priority 1: a Service's name and port, resolved in the pod's namespace.
	fallback     string
	fallbackPort uint32
}

// failoverOf reads the ext_proc cluster's second priority and health check; nil when it has one
// host and no check (the stand-in then sends to that host alone, as before).
func failoverOf(c *clusterv3.Cluster, local string) (*extProcFailover, error) {
	localities := c.GetLoadAssignment().GetEndpoints()
	checks := c.GetHealthChecks()
	if len(localities) == 1 && len(checks) == 0 {
		return nil, nil
	}
	if len(localities) != 2 || localities[0].GetPriority() != 0 || localities[1].GetPriority() != 1 ||
		len(localities[0].GetLbEndpoints()) != 1 || len(localities[1].GetLbEndpoints()) != 1 || len(checks) != 1 {
		return nil, fmt.Errorf("ext_proc cluster %s: the stand-in fails over from one checked host of priority 0 to one host of priority 1", c.GetName())
	}
	check := checks[0]
	if check.GetGrpcHealthCheck() == nil {
		return nil, fmt.Errorf("ext_proc cluster %s: the stand-in checks gRPC health only", c.GetName())
	}
	if c.GetType() != clusterv3.Cluster_STRICT_DNS {
		return nil, fmt.Errorf("ext_proc cluster %s: the stand-in resolves priority 1's name as STRICT_DNS does", c.GetName())
	}
	// The check speaks plaintext when its criteria match a raw buffer socket of the cluster's.
	plaintext := false
	for _, m := range c.GetTransportSocketMatches() {
		if m.GetTransportSocket().GetName() == "envoy.transport_sockets.raw_buffer" && matches(m.GetMatch().AsMap(), check.GetTransportSocketMatchCriteria().AsMap()) {
			plaintext = true
		}
	}
	if !plaintext {
		return nil, fmt.Errorf("ext_proc cluster %s: the health check must speak plaintext (every picker's health port does)", c.GetName())
	}
	first := localities[0].GetLbEndpoints()[0].GetEndpoint()
	second := localities[1].GetLbEndpoints()[0].GetEndpoint()
	if !second.GetHealthCheckConfig().GetDisableActiveHealthCheck() {
		return nil, fmt.Errorf("ext_proc cluster %s: the stand-in checks priority 0 only", c.GetName())
	}
	healthPort := first.GetHealthCheckConfig().GetPortValue()
	if healthPort == 0 {
		healthPort = first.GetAddress().GetSocketAddress().GetPortValue()
	}
	host, _, err := net.SplitHostPort(local)
	if err != nil {
		return nil, err
	}
	f := &extProcFailover{
		local: local, health: net.JoinHostPort(host, strconv.Itoa(int(healthPort))),
		serviceName: check.GetGrpcHealthCheck().GetServiceName(),
		interval:    check.GetInterval().AsDuration(), timeout: check.GetTimeout().AsDuration(),
		unhealthy: check.GetUnhealthyThreshold().GetValue(), healthy: check.GetHealthyThreshold().GetValue(),
		fallback: second.GetAddress().GetSocketAddress().GetAddress(), fallbackPort: second.GetAddress().GetSocketAddress().GetPortValue(),
	}
	if nti := check.GetNoTrafficInterval().AsDuration(); nti > f.interval {
		f.interval = nti // the stand-in checks at one pace: the slower, as a cluster with no traffic yet
	}
	if strings.Contains(f.fallback, ".") {
		return nil, fmt.Errorf("ext_proc cluster %s: priority 1 %q: the stand-in resolves a Service's short name in the pod's namespace only", c.GetName(), f.fallback)
	}
	return f, nil
}

// matches: every key of criteria has the value in match (a transport socket match's rule).
func matches(match, criteria map[string]any) bool {
	for k, v := range match {
		if criteria[k] != v {
			return false
		}
	}
	return len(match) > 0
}

// run checks the local picker and moves ext_proc between it and the Service's pickers until ctx
// ends.
func (f *extProcFailover) run(ctx context.Context, gw *gateway.Gateway, clients kubernetes.Interface, namespace string) error {
	conn, err := grpc.NewClient(f.health, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	go func() {
		defer func() { _ = conn.Close() }()
		health := healthpb.NewHealthClient(conn)
		healthy := false
		var passed, failed uint32
		current := ""
		for ctx.Err() == nil {
			checkCtx, cancel := context.WithTimeout(ctx, f.timeout)
			resp, err := health.Check(checkCtx, &healthpb.HealthCheckRequest{Service: f.serviceName})
			cancel()
			was := healthy
			if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				passed, failed = passed+1, 0
				healthy = healthy || passed >= f.healthy
			} else {
				passed, failed = 0, failed+1
				healthy = healthy && failed < f.unhealthy
			}
			if healthy != was || failed == 1 {
				fmt.Printf("%s health check of %s: %v %v (healthy %v)\n", time.Now().Format(time.StampMilli), f.health, resp.GetStatus(), err, healthy)
			}
			to := []string{f.local}
			if !healthy {
				if others := f.resolve(ctx, clients, namespace); len(others) > 0 {
					to = others
				}
			}
			if now := strings.Join(to, ","); now != current {
				fmt.Printf("%s ext_proc to %s (local picker healthy %v)\n", time.Now().Format(time.StampMilli), now, healthy)
				gw.SendExtProcTo(to...)
				current = now
			}
			select {
			case <-ctx.Done():
			case <-time.After(f.interval):
			}
		}
	}()
	return nil
}

// resolve is the fallback Service's Ready endpoints, ip:port, as kube-proxy sends to them.
func (f *extProcFailover) resolve(ctx context.Context, clients kubernetes.Interface, namespace string) []string {
	svc, err := clients.CoreV1().Services(namespace).Get(ctx, f.fallback, metav1.GetOptions{})
	if err != nil {
		fmt.Printf("resolving %s: %v\n", f.fallback, err)
		return nil
	}
	portName := ""
	for _, p := range svc.Spec.Ports {
		if uint32(p.Port) == f.fallbackPort {
			portName = p.Name
		}
	}
	list, err := clients.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + f.fallback})
	if err != nil {
		fmt.Printf("resolving %s: %v\n", f.fallback, err)
		return nil
	}
	return gateway.ReadyEndpoints(gateway.Pointers(list.Items), namespace, f.fallback, portName)
}

// clusterClients reads the kubeconfig the suite gives the stand-in for the cluster's DNS and
// kube-proxy.
func clusterClients(kubeconfig string) (kubernetes.Interface, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}

// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	filelogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	gie "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/metadata"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/featurespace"
)

// standaloneStory is a manifest's router made standalone (its httproute removed), on a release,
// with a failure mode.
func standaloneStory(t *testing.T, file string, release api.EndpointPickerRelease, failure api.FailureMode) *render.Tree {
	t.Helper()
	return routedStory(t, file, func(_ *api.InferenceService, router *api.Role) {
		router.HTTPRoute, router.RouterMode, router.FailureMode, router.Strategy, router.EndpointPickerConfig = nil, "", failure, "", ""
		router.EndpointPicker = &api.EndpointPicker{Release: release}
	})
}

// flagValue is the value after a flag in a command line.
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func container(t *testing.T, pod *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

// The proxy's configuration is checked, not trusted: go-control-plane parses and validates the
// bootstrap the ConfigMap holds, for every release, and it sends ext_proc to the port the
// picker's command line listens on, fails closed, routes by the header the picker sets (which it
// removes from clients' requests first, with every other header a sidecar routes by), and listens
// on the port the Service targets, on IPv4 and IPv6, logging each request as JSON.
func TestStandaloneProxyBootstrap(t *testing.T) {
	for _, release := range eppconfig.Releases() {
		for _, failure := range []api.FailureMode{api.FailClose} {
			t.Run(string(release)+"/"+string(failure), func(t *testing.T) {
				tree := standaloneStory(t, "qwen-router-gie-v1.5.0.yaml", api.EndpointPickerRelease(release), failure)
				svcName := tree.Service.Name
				cm := objectOf[*corev1.ConfigMap](t, tree, api.RouterProxyConfigName(svcName))
				bootstrap, err := featurespace.ParseEnvoyBootstrap(cm.Data["envoy.yaml"])
				require.NoError(t, err)

				deployment := objectOf[*appsv1.Deployment](t, tree, api.EndpointPickerName(svcName))
				pod := &deployment.Spec.Template.Spec
				picker := container(t, pod, "epp")
				grpcPort, err := strconv.Atoi(flagValue(picker.Args, "--grpc-port"))
				require.NoError(t, err, "the picker's --grpc-port")
				assert.Empty(t, flagValue(picker.Args, "--secure-serving"), "the picker serves TLS, as the proxy's ext_proc cluster expects")

				// ext_proc: to the picker on loopback, over TLS, with the pool's failure mode.
				managers, err := featurespace.EnvoyListenerManagers(bootstrap)
				require.NoError(t, err)
				service := objectOf[*corev1.Service](t, tree, api.RouterServiceName(svcName))
				require.Len(t, service.Spec.Ports, 1, "one port, OpenAI-compatible HTTP")
				listenerPort := uint32(service.Spec.Ports[0].TargetPort.IntValue())
				require.Len(t, managers[listenerPort], 1, "a listener on the Service's target port %d", listenerPort)
				extProc, err := featurespace.EnvoyExtProc(managers[listenerPort][0])
				require.NoError(t, err)
				require.NotNil(t, extProc, "the Service's listener asks the picker")
				assert.False(t, extProc.GetFailureModeAllow(), "fails closed")
				assert.Equal(t, extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED, extProc.GetProcessingMode().GetRequestBodyMode())
				assert.Equal(t, extprocv3.ProcessingMode_SEND, extProc.GetProcessingMode().GetRequestHeaderMode())
				cluster := featurespace.EnvoyCluster(bootstrap, extProc.GetGrpcService().GetEnvoyGrpc().GetClusterName())
				require.NotNil(t, cluster)
				addr := cluster.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
				assert.Equal(t, "127.0.0.1", addr.GetAddress())
				assert.Equal(t, uint32(grpcPort), addr.GetPortValue(), "ext_proc goes to the picker's --grpc-port")
				assert.Equal(t, "envoy.transport_sockets.tls", cluster.GetTransportSocket().GetName())

				// While the pod's own picker fails its health check, ext_proc goes to the pickers'
				// Service: the check asks the port and service the picker's readiness probe asks,
				// in plaintext, and the Service (priority 1) is not checked.
				localities := cluster.GetLoadAssignment().GetEndpoints()
				require.Len(t, localities, 2, "the pod's picker, then the pickers' Service")
				assert.Equal(t, clusterv3.Cluster_STRICT_DNS, cluster.GetType(), "the Service's name is resolved")
				local := localities[0].GetLbEndpoints()[0].GetEndpoint()
				readiness := picker.ReadinessProbe.GRPC
				require.NotNil(t, readiness)
				assert.Equal(t, uint32(readiness.Port), local.GetHealthCheckConfig().GetPortValue(), "checked on the picker's health port")
				fallback := localities[1]
				assert.EqualValues(t, 1, fallback.GetPriority())
				fallbackAddr := fallback.GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
				eppService := objectOf[*corev1.Service](t, tree, api.EndpointPickerName(svcName))
				assert.Equal(t, eppService.Name, fallbackAddr.GetAddress(), "the pickers' Service, by its short name")
				assert.True(t, slices.ContainsFunc(eppService.Spec.Ports, func(p corev1.ServicePort) bool {
					return uint32(p.Port) == fallbackAddr.GetPortValue() && p.TargetPort.IntValue() == grpcPort
				}), "on the Service's port to the picker's --grpc-port")
				assert.True(t, fallback.GetLbEndpoints()[0].GetEndpoint().GetHealthCheckConfig().GetDisableActiveHealthCheck())
				require.Len(t, cluster.GetHealthChecks(), 1)
				check := cluster.GetHealthChecks()[0]
				assert.Equal(t, *readiness.Service, check.GetGrpcHealthCheck().GetServiceName(), "the service the readiness probe asks")
				plaintext := slices.ContainsFunc(cluster.GetTransportSocketMatches(), func(m *clusterv3.Cluster_TransportSocketMatch) bool {
					return m.GetTransportSocket().GetName() == "envoy.transport_sockets.raw_buffer" &&
						reflect.DeepEqual(m.GetMatch().AsMap(), check.GetTransportSocketMatchCriteria().AsMap())
				})
				assert.True(t, plaintext, "the health port speaks plaintext")

				// The route's cluster sends each request to the pod the picker names in its header.
				route := managers[listenerPort][0].GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0].GetRoute()
				dst := featurespace.EnvoyCluster(bootstrap, route.GetCluster())
				require.NotNil(t, dst)
				assert.Equal(t, clusterv3.Cluster_ORIGINAL_DST, dst.GetType())
				assert.True(t, dst.GetOriginalDstLbConfig().GetUseHttpHeader())
				assert.Equal(t, gie.DestinationEndpointKey, dst.GetOriginalDstLbConfig().GetHttpHeaderName())

				// A client's own copy of a header that names an address never reaches ext_proc or
				// the route: removed before any filter runs.
				hcm := managers[listenerPort][0]
				removed, err := featurespace.EnvoyRemovedHeaders(hcm)
				require.NoError(t, err)
				assert.Contains(t, removed, gie.DestinationEndpointKey, "the header the original-destination cluster reads")
				assert.Contains(t, removed, "x-prefiller-host-port", "the header llm-d's disaggregation sidecar sends prefill to")

				// Dual stack, and a JSON access log of each request.
				for _, l := range bootstrap.GetStaticResources().GetListeners() {
					require.Len(t, l.GetAdditionalAddresses(), 1, "listener %s", l.GetName())
					v6 := l.GetAdditionalAddresses()[0].GetAddress().GetSocketAddress()
					assert.Equal(t, "::", v6.GetAddress(), "listener %s", l.GetName())
					assert.Equal(t, l.GetAddress().GetSocketAddress().GetPortValue(), v6.GetPortValue(), "listener %s", l.GetName())
				}
				require.Len(t, hcm.GetAccessLog(), 1)
				var accessLog filelogv3.FileAccessLog
				require.NoError(t, hcm.GetAccessLog()[0].GetTypedConfig().UnmarshalTo(&accessLog))
				assert.NotEmpty(t, accessLog.GetLogFormat().GetJsonFormat().GetFields()["response_code"], "JSON, with each request's status")

				// The proxy's container declares the listener, reads the ConfigMap, is ready on /ready.
				proxy := container(t, pod, "envoy-proxy")
				assert.True(t, slices.ContainsFunc(proxy.Ports, func(p corev1.ContainerPort) bool { return uint32(p.ContainerPort) == listenerPort }))
				ready := proxy.ReadinessProbe.HTTPGet
				require.Len(t, managers[uint32(ready.Port.IntValue())], 1, "the readiness probe's port is a listener")
				assert.Equal(t, "/ready", ready.Path)
			})
		}
	}
}

// Gateway mode is as it was: no proxy, no ConfigMap of it, no router Service; standalone has no
// HTTPRoute and its Service comes last, after the pool, the picker and the awaited replicas.
func TestRouterModesObjects(t *testing.T) {
	gateway := story(t, "qwen-router-gie-v1.5.0.yaml")
	for _, o := range gateway.Objects {
		assert.NotContains(t, []string{api.RouterServiceName(gateway.Service.Name), api.RouterProxyConfigName(gateway.Service.Name)}, o.Name)
	}
	deployment := objectOf[*appsv1.Deployment](t, gateway, api.EndpointPickerName(gateway.Service.Name))
	assert.Len(t, deployment.Spec.Template.Spec.Containers, 1)

	standalone := standaloneStory(t, "qwen-router-gie-v1.5.0.yaml", api.EPPReleaseGIE150, api.FailClose)
	for _, o := range standalone.Objects {
		assert.NotEqual(t, "HTTPRoute", o.Kind)
	}
	svc := refWithSuffix(t, standalone, "router-service")
	assert.Equal(t, api.RouterServiceName(standalone.Service.Name), svc.Name)
	assert.Subset(t, svc.DependsOn, []string{"pool", "epp-deployment", "server-0"}, "it lets traffic in once they are up")
	eppDeployment := refWithSuffix(t, standalone, "epp-deployment")
	assert.Contains(t, eppDeployment.DependsOn, "router-proxy-config")
}

// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"errors"
	"fmt"
	"path"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	earlymutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// ProgramEnvoy is the router's proxy.
const ProgramEnvoy = "Envoy proxy"

// ParseEnvoyBootstrap reads an Envoy bootstrap (YAML or JSON) into go-control-plane's typed
// Bootstrap, strictly (an unknown field is an error, as Envoy's own loader makes it), and runs
// the validation rules of every message in it, the typed configurations its Any fields hold
// included (ValidateAll does not look inside an Any).
func ParseEnvoyBootstrap(text string) (*bootstrapv3.Bootstrap, error) {
	data, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, err
	}
	var bootstrap bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(data, &bootstrap); err != nil {
		return nil, fmt.Errorf("not an Envoy bootstrap: %w", err)
	}
	if err := validateAll(&bootstrap); err != nil {
		return nil, err
	}
	return &bootstrap, nil
}

// validateAll runs the message's ValidateAll and that of every message an Any in it holds.
func validateAll(m proto.Message) error {
	var errs []error
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.ProtoReflect().Descriptor().FullName(), err))
		}
	}
	var walk func(protoreflect.Message)
	walk = func(msg protoreflect.Message) {
		if a, ok := msg.Interface().(*anypb.Any); ok {
			inner, err := a.UnmarshalNew()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", a.GetTypeUrl(), err))
				return
			}
			if err := validateAll(inner); err != nil {
				errs = append(errs, err)
			}
			return
		}
		msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool { walk(mv.Message()); return true })
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				walk(v.Message())
			}
			return true
		})
	}
	walk(m.ProtoReflect())
	return errors.Join(errs...)
}

// EnvoyExtProc is the ext_proc filter of a listener's HTTP connection manager, nil for none.
func EnvoyExtProc(hcm *hcmv3.HttpConnectionManager) (*extprocv3.ExternalProcessor, error) {
	for _, f := range hcm.GetHttpFilters() {
		if a := f.GetTypedConfig(); a != nil && strings.HasSuffix(a.GetTypeUrl(), "ext_proc.v3.ExternalProcessor") {
			var ep extprocv3.ExternalProcessor
			if err := a.UnmarshalTo(&ep); err != nil {
				return nil, err
			}
			return &ep, nil
		}
	}
	return nil, nil
}

// EnvoyRemovedHeaders are the request headers a connection manager's early header mutations
// remove before any filter sees the request; a mutation that does anything else is an error (the
// render writes removals only, and the stand-in mirrors no other).
func EnvoyRemovedHeaders(hcm *hcmv3.HttpConnectionManager) ([]string, error) {
	var out []string
	for _, ext := range hcm.GetEarlyHeaderMutationExtensions() {
		var m earlymutationv3.HeaderMutation
		if err := ext.GetTypedConfig().UnmarshalTo(&m); err != nil {
			return nil, fmt.Errorf("early header mutation %s: not a header_mutation: %w", ext.GetName(), err)
		}
		for _, mutation := range m.GetMutations() {
			if mutation.GetRemove() == "" {
				return nil, fmt.Errorf("early header mutation %s: %v is not a removal", ext.GetName(), mutation)
			}
			out = append(out, mutation.GetRemove())
		}
	}
	return out, nil
}

// EnvoyListenerManagers are every listener's HTTP connection managers, by listener port.
func EnvoyListenerManagers(b *bootstrapv3.Bootstrap) (map[uint32][]*hcmv3.HttpConnectionManager, error) {
	out := map[uint32][]*hcmv3.HttpConnectionManager{}
	for _, l := range b.GetStaticResources().GetListeners() {
		port := l.GetAddress().GetSocketAddress().GetPortValue()
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				var hcm hcmv3.HttpConnectionManager
				if a := f.GetTypedConfig(); a != nil && a.MessageIs(&hcm) {
					if err := a.UnmarshalTo(&hcm); err != nil {
						return nil, err
					}
					out[port] = append(out[port], &hcm)
				}
			}
		}
	}
	return out, nil
}

// EnvoyCluster is the bootstrap's static cluster of the name, nil for none.
func EnvoyCluster(b *bootstrapv3.Bootstrap, name string) *clusterv3.Cluster {
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// loopbackPorts are the ports of a cluster's endpoints on the pod's own loopback.
func loopbackPorts(c *clusterv3.Cluster) []uint32 {
	var out []uint32
	for _, eps := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range eps.GetLbEndpoints() {
			if sa := lb.GetEndpoint().GetAddress().GetSocketAddress(); isLoopback(sa) {
				out = append(out, sa.GetPortValue())
			}
		}
	}
	return out
}

// healthCheckedLoopbackPorts are the ports where a cluster's active health check asks its
// endpoints on the pod's own loopback (an endpoint's health_check_config port, else its own).
func healthCheckedLoopbackPorts(c *clusterv3.Cluster) []uint32 {
	if len(c.GetHealthChecks()) == 0 {
		return nil
	}
	var out []uint32
	for _, eps := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range eps.GetLbEndpoints() {
			e := lb.GetEndpoint()
			if !isLoopback(e.GetAddress().GetSocketAddress()) || e.GetHealthCheckConfig().GetDisableActiveHealthCheck() {
				continue
			}
			port := e.GetHealthCheckConfig().GetPortValue()
			if port == 0 {
				port = e.GetAddress().GetSocketAddress().GetPortValue()
			}
			out = append(out, port)
		}
	}
	return out
}

func isLoopback(sa *corev3.SocketAddress) bool {
	return sa.GetAddress() == "127.0.0.1" || sa.GetAddress() == "::1" || sa.GetAddress() == "localhost"
}

// envoyProcess is an Envoy container's process as its bootstrap makes it: it listens on every
// listener's port and its admin port, and sends ext_proc to the program on its ext_proc
// cluster's loopback port (an Endpoint Picker) and its other loopback clusters to itself.
func envoyProcess(c *corev1.Container, pod *Pod, files map[string]map[string]string) (*Process, error) {
	config, _ := argv(c.Args).value("-c", "--config-path")
	text, err := mountedFile(c, pod, files, config)
	if err != nil {
		return nil, err
	}
	b, err := ParseEnvoyBootstrap(text)
	if err != nil {
		return nil, fmt.Errorf("its bootstrap %s: %w", config, err)
	}
	proc := &Process{Container: c.Name, Program: ProgramEnvoy, Name: c.Name}
	if sa := b.GetAdmin().GetAddress().GetSocketAddress(); sa != nil {
		proc.Listens = append(proc.Listens, int32(sa.GetPortValue()))
	}
	managers, err := EnvoyListenerManagers(b)
	if err != nil {
		return nil, err
	}
	extProcClusters := map[string]bool{}
	for _, l := range b.GetStaticResources().GetListeners() {
		proc.Listens = append(proc.Listens, int32(l.GetAddress().GetSocketAddress().GetPortValue()))
	}
	for _, hcms := range managers {
		for _, hcm := range hcms {
			ep, err := EnvoyExtProc(hcm)
			if err != nil {
				return nil, err
			}
			if ep != nil {
				extProcClusters[ep.GetGrpcService().GetEnvoyGrpc().GetClusterName()] = true
				proc.ExtProcMessageTimeouts = append(proc.ExtProcMessageTimeouts, ep.GetMessageTimeout().AsDuration())
			}
			removes, err := EnvoyRemovedHeaders(hcm)
			if err != nil {
				return nil, err
			}
			proc.Removes = append(proc.Removes, removes...)
		}
	}
	for _, cl := range b.GetStaticResources().GetClusters() {
		for _, port := range loopbackPorts(cl) {
			t := Target{Port: int32(port), Program: ProgramEnvoy, What: "cluster " + cl.GetName()}
			if extProcClusters[cl.GetName()] {
				t.Program, t.What, t.Serves = ProgramEndpointPicker, "ext_proc cluster "+cl.GetName(), ServesExtProc
			}
			proc.Targets = append(proc.Targets, t)
		}
		if extProcClusters[cl.GetName()] {
			for _, port := range healthCheckedLoopbackPorts(cl) {
				proc.Targets = append(proc.Targets, Target{Port: int32(port), Program: ProgramEndpointPicker,
					What: "ext_proc cluster " + cl.GetName() + "'s health check", Serves: ServesGRPCHealth})
			}
		}
	}
	for name := range extProcClusters {
		if EnvoyCluster(b, name) == nil {
			return nil, fmt.Errorf("its ext_proc filter names cluster %q, which the bootstrap does not have", name)
		}
	}
	return proc, nil
}

// mountedFile is the text of a file the container reads, from the ConfigMap volume mounted over
// its directory (files: the tree's ConfigMaps' data by name).
func mountedFile(c *corev1.Container, pod *Pod, files map[string]map[string]string, file string) (string, error) {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			key := rel
			for _, item := range v.ConfigMap.Items {
				if path.Clean(item.Path) == rel {
					key = item.Key
				}
			}
			data, ok := files[v.ConfigMap.Name][key]
			if !ok {
				return "", fmt.Errorf("%s: ConfigMap %s has no key %s", file, v.ConfigMap.Name, key)
			}
			return data, nil
		}
	}
	return "", fmt.Errorf("%s is on no ConfigMap volume the container mounts", file)
}

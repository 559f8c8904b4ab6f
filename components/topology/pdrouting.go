package topology

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/eppconfig"
)

// LabelPDRole is the label llm-d's prefill and decode filters select pods by.
const LabelPDRole = "llm-d.ai/role"

// Values of LabelPDRole.
var pdRoles = map[api.ComponentType]string{api.ComponentTypePrefiller: "prefill", api.ComponentTypeDecoder: "decode"}

const (
	routingSidecarPortName = "sidecar-http"
)

// routePrefillDecode labels a routed prefill/decode role's pods for llm-d's filters.
func routePrefillDecode(tpl *corev1.PodTemplateSpec, role *api.Role) {
	if value, ok := pdRoles[role.ComponentType]; ok {
		tpl.Labels = merged(tpl.Labels, map[string]string{LabelPDRole: value})
	}
}

// addRoutingSidecar puts llm-d's routing sidecar (llm-d-router's disaggregation sidecar since
// v0.10.0, which took the routing sidecar in) in front of a decode leader's server: the
// sidecar takes the pool's port and, for each request, has the prefill pod the Endpoint Picker
// chose compute the KV cache before the local vLLM, moved to api.DecodeVLLMPort, decodes. It is
// a native sidecar (an init container that keeps running), so it starts before the server and
// stops after it.
func addRoutingSidecar(tpl *corev1.PodTemplateSpec, routing *routing) {
	poolPort := routing.PoolPort
	server := &tpl.Spec.Containers[api.ServingContainerIndex]
	connector := api.RoutingConnector(server)
	vllmPort := int32(api.DecodeVLLMPort)
	setFlag(server, "--port", strconv.Itoa(api.DecodeVLLMPort))
	for i := range server.Ports { // validation made sure that one of them, if any, is the serving port
		if server.Ports[i].ContainerPort == poolPort {
			server.Ports[i].ContainerPort = vllmPort
		}
	}
	for _, probe := range []*corev1.Probe{server.ReadinessProbe, server.LivenessProbe, server.StartupProbe} {
		retargetProbe(probe, poolPort, vllmPort)
	}
	image, args := eppconfig.ImageRoutingSidecar, []string{
		"--port=" + strconv.Itoa(int(poolPort)),
		"--vllm-port=" + strconv.Itoa(api.DecodeVLLMPort),
		"--connector=" + connector,
		// Plain HTTP, as the gateway speaks to model servers; the sidecar's default is TLS.
		"--secure-proxy=false",
	}
	if routing.Selection.Flavor == eppconfig.FlavorRouter {
		// llm-d-router v0.10.0's pkg/sidecar/proxy/options.go AddFlags: --model-server-port
		// replaces the deprecated --vllm-port, --kv-connector the old --connector, and
		// --inference-pool names the pool (namespace/name) its SSRF protection would allow-list.
		image, args = eppconfig.ImageDisaggSidecar, []string{
			"--port=" + strconv.Itoa(int(poolPort)),
			"--model-server-port=" + strconv.Itoa(api.DecodeVLLMPort),
			"--kv-connector=" + connector,
			"--inference-pool=" + routing.svc.Namespace + "/" + api.PoolName(routing.svc.Name),
			"--secure-proxy=false",
		}
	}
	tpl.Spec.InitContainers = append(tpl.Spec.InitContainers, corev1.Container{
		Name:          api.RoutingSidecarName,
		Image:         image,
		Args:          args,
		Ports:         []corev1.ContainerPort{{Name: routingSidecarPortName, ContainerPort: poolPort, Protocol: corev1.ProtocolTCP}},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		// The pod is ready, and in the pool, only when the sidecar answers on the pool's port too.
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/health", Port: intstr.FromString(routingSidecarPortName),
		}}, PeriodSeconds: 5},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	})
}

// setFlag gives a command-line flag one value: every occurrence in the command and args is
// rewritten (both "--flag value" and "--flag=value"); absent, it is appended to the args.
func setFlag(c *corev1.Container, name, value string) {
	found := false
	for _, words := range [][]string{c.Command, c.Args} {
		for i := 0; i < len(words); i++ {
			switch {
			case words[i] == name && i+1 < len(words):
				words[i+1], found = value, true
				i++
			case strings.HasPrefix(words[i], name+"="):
				words[i], found = name+"="+value, true
			}
		}
	}
	if !found {
		c.Args = append(c.Args, name, value)
	}
}

// retargetProbe points a probe of the server's old port at its new one; named ports follow the
// container's port on their own.
func retargetProbe(probe *corev1.Probe, from, to int32) {
	if probe == nil {
		return
	}
	retarget := func(port *intstr.IntOrString) {
		if port.Type == intstr.Int && port.IntVal == from {
			*port = intstr.FromInt32(to)
		}
	}
	switch {
	case probe.HTTPGet != nil:
		retarget(&probe.HTTPGet.Port)
	case probe.TCPSocket != nil:
		retarget(&probe.TCPSocket.Port)
	case probe.GRPC != nil && probe.GRPC.Port == from:
		probe.GRPC.Port = to
	}
}

// SPDX-License-Identifier: Apache-2.0

package render

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
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
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	connector := api.RoutingConnector(server)
	vllmPort := int32(api.DecodeVLLMPort)
	vllm.SetFlag(server, vllm.FlagPort.Name, strconv.Itoa(api.DecodeVLLMPort))
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
		// replaces the deprecated --vllm-port, --kv-connector the old --connector. SSRF
		// protection (allowlist.go AllowlistValidator): the sidecar sends prefills only to the
		// pods of --inference-pool (namespace/name, of --pool-group), which it watches with the
		// pod's service account (disaggSidecarRBAC); without it, it follows whatever host the
		// x-prefiller-host-port header names.
		image, args = eppconfig.ImageDisaggSidecar, []string{
			"--port=" + strconv.Itoa(int(poolPort)),
			"--model-server-port=" + strconv.Itoa(api.DecodeVLLMPort),
			"--kv-connector=" + connector,
			"--inference-pool=" + routing.svc.Namespace + "/" + api.PoolName(routing.svc.Name),
			"--pool-group=" + routing.router.PoolGroup(),
			"--enable-ssrf-protection=true",
			"--secure-proxy=false",
		}
		if tpl.Spec.ServiceAccountName == "" {
			tpl.Spec.ServiceAccountName = api.DisaggSidecarName(routing.svc.Name)
		}
	}
	ports := []corev1.ContainerPort{{Name: routingSidecarPortName, ContainerPort: poolPort, Protocol: corev1.ProtocolTCP}}
	var env []corev1.EnvVar
	if ranks := routing.PoolRanks; ranks > 1 {
		// A data parallel pod's ranks (validation allows them only with llm-d-router): the sidecar
		// serves port + i for local rank i and forwards it to the server's port + i, and keys its
		// header-routed path by the pod's IP (llm-d-router v0.10.0 pkg/sidecar/proxy/data_parallel.go
		// startDataParallel; options.go AddFlags, --data-parallel-size).
		args = append(args, "--data-parallel-size="+strconv.Itoa(int(ranks)))
		env = []corev1.EnvVar{{Name: api.PodIPVariable, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		for i, rankPort := range api.RankPorts(poolPort, ranks)[1:] {
			ports = append(ports, corev1.ContainerPort{Name: routingSidecarPortName + "-" + strconv.Itoa(i+1), ContainerPort: rankPort, Protocol: corev1.ProtocolTCP})
		}
	}
	tpl.Spec.InitContainers = append(tpl.Spec.InitContainers, corev1.Container{
		Name:          api.RoutingSidecarName,
		Image:         image,
		Args:          args,
		Env:           env,
		Ports:         ports,
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

// Suffixes of the disaggregation sidecar's RBAC objects.
const (
	suffixSidecarServiceAccount = "disagg-sidecar-serviceaccount"
	suffixSidecarRole           = "disagg-sidecar-role"
	suffixSidecarRoleBinding    = "disagg-sidecar-rolebinding"
)

// disaggSidecarRefs lay out the permissions of llm-d-router's disaggregation sidecar on a routed
// prefill/decode service: a service account (the decode leaders' unless their template names
// one), a Role and its RoleBinding; the decode replicas depend on the binding, so the sidecar can
// read the pool when it starts (its allowlist's informer waits for a first list, which a missing
// permission would fail forever, and the pod would never be ready).
func disaggSidecarRefs(svc *api.InferenceService) []Ref {
	router := svc.Spec.Router()
	if router == nil || !svc.Spec.Disaggregated() || router.EndpointPickerRelease() != eppconfig.ReleaseRouter {
		return nil
	}
	name := api.DisaggSidecarName(svc.Name)
	return []Ref{
		routerRef(svc, KindServiceAccount, name, suffixSidecarServiceAccount),
		routerRef(svc, KindRole, name, suffixSidecarRole),
		routerRef(svc, KindRoleBinding, name, suffixSidecarRoleBinding, suffixSidecarServiceAccount, suffixSidecarRole),
	}
}

// sidecarRules are the sidecar's least privilege (allowlist.go Start and createPodInformer): list
// and watch its pool by name (a field selector on metadata.name, which RBAC's resourceNames
// allows), and list and watch the namespace's pods (by the pool's label selector, which RBAC
// cannot narrow).
func (r *routing) sidecarRules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{r.router.PoolGroup()}, Resources: []string{"inferencepools"}, ResourceNames: []string{api.PoolName(r.svc.Name)}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
	}
}

// sidecarRoleBinding binds the sidecar's Role to the service account of every routed decode
// role: its own, or the one its template names.
func (r *routing) sidecarRoleBinding(ref Ref) *rbacv1.RoleBinding {
	name := api.DisaggSidecarName(r.svc.Name)
	accounts := []string{name}
	for i := range r.svc.Spec.Roles {
		role := &r.svc.Spec.Roles[i]
		if role.ComponentType != api.ComponentTypeDecoder || role.Template == nil {
			continue
		}
		if sa := role.Template.Spec.ServiceAccountName; sa != "" && !slices.Contains(accounts, sa) {
			accounts = append(accounts, sa)
		}
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   typeMeta(KindRoleBinding),
		ObjectMeta: r.meta(ref),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: KindRole.Kind, Name: name},
	}
	for _, sa := range accounts {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: r.svc.Namespace})
	}
	return binding
}

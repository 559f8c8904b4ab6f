// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// dualPodsService is one single-GPU worker role whose servers sleep and wake through FMA.
func dualPodsService() *InferenceService {
	tpl := server("--model", "ibm-granite/granite-3.3-2b-instruct")
	tpl.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("16Gi")},
		Limits:   corev1.ResourceList{GPUResourceName: resource.MustParse("1")},
	}
	return &InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "granite", Namespace: "llm"},
		Spec: InferenceServiceSpec{
			Roles: []Role{{Name: "server", ComponentType: ComponentTypeWorker, Replicas: ptr.To(3), Template: tpl,
				ModelFlexibility: &ModelFlexibility{Mode: DualPods}}},
			DualPodsController: &DualPodsController{Install: true},
		},
	}
}

func TestDualPodsServicePasses(t *testing.T) {
	assert.Empty(t, Validate(dualPodsService()))
}

func TestDualPodsRules(t *testing.T) {
	role := func(s *InferenceService) *Role { return &s.Spec.Roles[0] }
	serverOf := func(s *InferenceService) *corev1.Container { return &s.Spec.Roles[0].Template.Spec.Containers[0] }
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"mode known", func(s *InferenceService) { role(s).ModelFlexibility.Mode = "launcher" },
			`spec.roles[0].modelFlexibility.mode: Unsupported value: "launcher": supported values: "dualPods"`},
		{"not multi-node", func(s *InferenceService) {
			role(s).Multinode = &Multinode{NodeCount: 2}
			serverOf(s).Args = nil
		}, "spec.roles[0].modelFlexibility: Forbidden: only single-node roles: FMA runs one server per pod"},
		{"not prefill/decode", func(s *InferenceService) {
			decode := *role(s)
			decode.Name, decode.ComponentType, decode.ModelFlexibility = "decode", ComponentTypeDecoder, nil
			role(s).ComponentType = ComponentTypePrefiller
			s.Spec.Roles = append(s.Spec.Roles, decode)
		}, "spec.roles[0].modelFlexibility: Forbidden: only worker roles"},
		{"not gang scheduled", func(s *InferenceService) { s.Spec.SchedulingStrategy = &SchedulingStrategy{SchedulerName: "volcano"} },
			"spec.roles[0].modelFlexibility: Forbidden: a dual-pods role is not gang scheduled"},
		{"ports are ports", func(s *InferenceService) { role(s).ModelFlexibility.AdminPort = ptr.To(70000) },
			"spec.roles[0].modelFlexibility.adminPort: Invalid value: 70000"},
		{"ports differ", func(s *InferenceService) { role(s).ModelFlexibility.ProbesPort = ptr.To(8081) },
			"spec.roles[0].modelFlexibility.probesPort: Invalid value: 8081: must differ from adminPort"},
		{"one container", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers = append(s.Spec.Roles[0].Template.Spec.Containers, corev1.Container{Name: "log", Image: "busybox"})
		}, "spec.roles[0].template.spec.containers: Too many: 2: must have at most 1 item"},
		{"no init containers", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.InitContainers = []corev1.Container{{Name: "warm", Image: "busybox"}}
		}, "spec.roles[0].template.spec.initContainers: Forbidden"},
		{"GPUs to hold", func(s *InferenceService) { delete(serverOf(s).Resources.Limits, GPUResourceName) },
			"spec.roles[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Required value"},
		{"explicit memory", func(s *InferenceService) { delete(serverOf(s).Resources.Requests, corev1.ResourceMemory) },
			"spec.roles[0].template.spec.containers[0].resources.requests[memory]: Required value"},
		{"not a shell script", func(s *InferenceService) {
			serverOf(s).Command, serverOf(s).Args = []string{"sh", "-c", "vllm serve x"}, nil
		}, "spec.roles[0].template.spec.containers[0].command: Invalid value"},
		{"an HTTP readiness probe", func(s *InferenceService) {
			serverOf(s).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8000)}}}
		}, "spec.roles[0].template.spec.containers[0].readinessProbe: Invalid value: \"(the probe)\": FMA reads the server's port from an httpGet readiness probe"},
		{"a probe port that resolves", func(s *InferenceService) {
			serverOf(s).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("api")}}}
		}, `the probe's port "api" is not a port of the container`},
		{"the controller's namespace is the service's", func(s *InferenceService) { s.Spec.DualPodsController.Namespace = "fma" },
			`spec.dualPodsController.namespace: Invalid value: "fma": FMA's controller manages the pods of its own namespace only: the service's requesters are in "llm"`},
		{"a controller for dual pods only", func(s *InferenceService) { role(s).ModelFlexibility = nil },
			"spec.dualPodsController: Invalid value: \"(the controller)\": no role has modelFlexibility.mode dualPods"},
		{"sleeper limit", func(s *InferenceService) { s.Spec.DualPodsController.SleeperLimit = ptr.To(-1) },
			"spec.dualPodsController.sleeperLimit: Invalid value: -1"},
		{"version is a tag", func(s *InferenceService) { s.Spec.DualPodsController.Version = "ghcr.io/x:v1" },
			`spec.dualPodsController.version: Invalid value: "ghcr.io/x:v1"`},
		{"not on a router", func(s *InferenceService) {
			s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter,
				ModelFlexibility: &ModelFlexibility{Mode: DualPods}, HTTPRoute: httpRoute(`{"parentRefs":[{"name":"gw"}]}`)})
		}, "spec.roles[1].modelFlexibility: Forbidden: a router runs the Endpoint Picker"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, dualPodsService, tc.mutate, tc.want) })
	}
}

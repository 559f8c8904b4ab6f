// SPDX-License-Identifier: Apache-2.0

package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func gpus(n string) corev1.ResourceList {
	return corev1.ResourceList{GPUResourceName: resource.MustParse(n)}
}

// TestPodGPUsAreTheSchedulers: every container counts, init containers as the scheduler counts
// them, requests defaulting to limits.
func TestPodGPUsAreTheSchedulers(t *testing.T) {
	sidecar := func(n string) corev1.Container {
		return corev1.Container{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Limits: gpus(n)}}
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want int64
	}{
		{"none", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, 0},
		{"a limit", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}}, 4},
		{"a request", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: gpus("2")}}}}, 2},
		{"two containers", corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Limits: gpus("1")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}}, 5},
		{"an init container below the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Limits: gpus("2")}}},
			Containers:     []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}}, 4},
		{"an init container above them", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Limits: gpus("6")}}},
			Containers:     []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}}, 6},
		{"a sidecar adds to the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("1")},
			Containers:     []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}}, 5},
		{"an init container after a sidecar runs beside it", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("2"), {Name: "i", Resources: corev1.ResourceRequirements{Limits: gpus("5")}}},
			Containers:     []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}}, 7},
	} {
		assert.Equal(t, tc.want, PodGPUs(&tc.spec), tc.name)
	}
}

// TestTheServerIsFoundByWhatItRuns: a sidecar before the vLLM container; without a vLLM
// container the first container is the server.
func TestTheServerIsFoundByWhatItRuns(t *testing.T) {
	log := corev1.Container{Name: "log", Image: "fluent/fluent-bit:3.2"}
	vllmServer := corev1.Container{Name: "vllm", Image: "vllm/vllm-openai:v0.33.0"}
	other := corev1.Container{Name: "server", Image: "example.com/my-server:1"}
	assert.Equal(t, 1, ServingContainerIndex(&corev1.PodSpec{Containers: []corev1.Container{log, vllmServer}}))
	assert.Equal(t, 0, ServingContainerIndex(&corev1.PodSpec{Containers: []corev1.Container{vllmServer, log}}))
	assert.Equal(t, 0, ServingContainerIndex(&corev1.PodSpec{Containers: []corev1.Container{other, log}}))
	assert.Equal(t, 0, ServingContainerIndex(&corev1.PodSpec{}))

	// Validation reads the server where it is: its flags, GPUs and port.
	svc := validService()
	tpl := svc.Spec.Roles[0].Template
	tpl.Spec.Containers = append([]corev1.Container{log}, tpl.Spec.Containers...)
	assert.Empty(t, Validate(svc))
	tpl.Spec.Containers[1].Args = append(tpl.Spec.Containers[1].Args, "--distributed-executor-backend", "mp")
	assert.Equal(t, "spec.roles[0].template.spec.containers[1].args", Validate(svc)[0].Field)
}

// TestGPUCountsAreShownAsNumbers: a GPU count is shown in plain decimal, never in milli-units.
func TestGPUCountsAreShownAsNumbers(t *testing.T) {
	svc := validService()
	svc.Spec.Roles[1].Template.Spec.Containers[0].Resources.Limits[GPUResourceName] = resource.MustParse("2500m")
	svc.Spec.Roles[1].Template.Spec.Containers[0].Resources.Requests = gpus("1.5")
	var all []string
	for _, e := range Validate(svc) {
		all = append(all, e.Error())
	}
	text := strings.Join(all, "\n")
	assert.Contains(t, text, `limits[nvidia.com/gpu]: Invalid value: "2.5": a GPU count is a whole number`)
	assert.Contains(t, text, `requests[nvidia.com/gpu]: Invalid value: "1.5": must equal the limit (2.5)`)
	assert.NotContains(t, text, "500m")
}

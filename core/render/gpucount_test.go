// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// logShipper is a sidecar that serves nothing, with the GPUs given (0: none).
func logShipper(gpus int64) corev1.Container {
	c := corev1.Container{Name: "log", Image: "fluent/fluent-bit:3.2"}
	if gpus > 0 {
		c.Resources.Limits = corev1.ResourceList{api.GPUResourceName: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return c
}

// TestTheServerIsFoundByWhatItRuns: a sidecar before the vLLM container is not the server: the
// vLLM container is wrapped in the Ray launcher, and the pod's GPUs are the server's.
func TestTheServerIsFoundByWhatItRuns(t *testing.T) {
	tree := story4With(t, func(svc *api.InferenceService) {
		tpl := svc.Spec.Roles[0].Template.DeepCopy()
		tpl.Spec.Containers = append([]corev1.Container{logShipper(0)}, tpl.Spec.Containers...)
		svc.Spec.Roles[0].Template = tpl
	})
	leader := byName(tree)["deepseek-r1-disagg-prefill-0"].Spec.LeaderWorkerTemplate.LeaderTemplate
	require.Len(t, leader.Spec.Containers, 2)
	assert.Equal(t, "fluent/fluent-bit:3.2", leader.Spec.Containers[0].Image)
	assert.Empty(t, leader.Spec.Containers[0].Command, "the sidecar runs as it is")
	assert.Contains(t, leader.Spec.Containers[1].Args[0], "ray start --head", "the server is wrapped")
	s := render.Summarize(tree)
	assert.EqualValues(t, 8, s.Roles[0].GPUsPerPod)
	assert.EqualValues(t, 80, s.GPUs)
}

// TestPodGPUsAreTheSchedulers: a pod's GPUs are every container's, with init containers counted
// as the scheduler counts them, in the summary, the PodGroup's minResources and the plan alike.
func TestPodGPUsAreTheSchedulers(t *testing.T) {
	for _, tc := range []struct {
		name           string
		change         func(spec *corev1.PodSpec)
		prefillPodGPUs int64
	}{
		{"a second container's GPUs", func(spec *corev1.PodSpec) {
			spec.Containers = append(spec.Containers, logShipper(2))
		}, 10},
		{"a sidecar init container's GPUs are added", func(spec *corev1.PodSpec) {
			sidecar := logShipper(1)
			sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			spec.InitContainers = append(spec.InitContainers, sidecar)
		}, 9},
		{"an init container needs its GPUs only while it runs", func(spec *corev1.PodSpec) {
			spec.InitContainers = append(spec.InitContainers, logShipper(4))
		}, 8},
		{"an init container larger than the containers sets the pod's", func(spec *corev1.PodSpec) {
			spec.InitContainers = append(spec.InitContainers, logShipper(16))
		}, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := story4With(t, func(svc *api.InferenceService) {
				tpl := svc.Spec.Roles[0].Template.DeepCopy()
				tc.change(&tpl.Spec)
				svc.Spec.Roles[0].Template = tpl
				svc.Spec.SchedulingStrategy = &api.SchedulingStrategy{MinResources: api.MinResourcesAuto}
			})
			s := render.Summarize(tree)
			assert.Equal(t, tc.prefillPodGPUs, s.Roles[0].GPUsPerPod)
			assert.Equal(t, 2*tc.prefillPodGPUs+64, s.GPUs, "prefill 1 x 2 pods, decode 2 x 4 pods of 8")
			gpus := (*podGroup(tree).Spec.MinResources)[api.GPUResourceName]
			assert.Equal(t, 2*tc.prefillPodGPUs+32, gpus.Value(), "the minimal set: prefill 1 x 2 pods, decode 1 x 4 pods of 8")
		})
	}
}

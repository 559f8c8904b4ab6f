// SPDX-License-Identifier: Apache-2.0

package fma

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// The annotation the controller reads is the one the core writes.
func TestTheCoreWritesWhatFMAReads(t *testing.T) {
	assert.Equal(t, ServerPatchAnnotation, render.AnnotationDualPodsServerPatch)
	assert.Equal(t, ServerContainer, render.DualPodsContainerName)
}

// A requester's server-providing pod, bound then unbound.
func TestServerProvidingPodLifecycle(t *testing.T) {
	requester := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "granite-server-0-0", Namespace: "llm", UID: "u1",
			Labels:      map[string]string{"app": "granite", "per-pod": "0"},
			Annotations: map[string]string{ServerPatchAnnotation: "metadata:\n  labels:\n    per-pod: null\n    serving: \"true\"\nspec:\n  containers:\n  - name: inference-server\n    image: vllm/vllm-openai:v0.33.0\n    env:\n    - {name: NODE, value: \"{{ .NodeName }}\"}\n"}},
		Spec: corev1.PodSpec{NodeName: "gpu-3",
			Volumes: []corev1.Volume{{Name: "kube-api-access-x1y2"}},
			Containers: []corev1.Container{{Name: "inference-server", Image: "requester",
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x1y2", MountPath: "/var/run/secrets"}},
				Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
	pod, err := ServerProvidingPod(requester, "0")
	require.NoError(t, err)
	c := pod.Spec.Containers[0]
	assert.Equal(t, "vllm/vllm-openai:v0.33.0", c.Image)
	assert.Equal(t, []corev1.EnvVar{{Name: "NODE", Value: "gpu-3"}, {Name: "CUDA_VISIBLE_DEVICES", Value: "0"}}, c.Env)
	gpu := c.Resources.Limits["nvidia.com/gpu"]
	assert.True(t, gpu.IsZero(), "the requester holds the GPU")
	assert.Empty(t, pod.Spec.Volumes, "the token volume is the requester's own")
	assert.Empty(t, c.VolumeMounts)
	assert.Equal(t, "gpu-3", pod.Spec.NodeSelector["kubernetes.io/hostname"])
	assert.Equal(t, map[string]string{"app": "granite", "serving": "true", DualLabel: "granite-server-0-0", SleepingLabel: "false"}, pod.Labels)
	assert.Equal(t, "granite-server-0-0-dual-", pod.GenerateName)
	assert.Equal(t, []string{providerFinalizer}, pod.Finalizers)

	Unbind(pod)
	assert.Equal(t, map[string]string{"app": "granite", "serving": "true", SleepingLabel: "true"}, pod.Labels,
		"asleep, and still labelled as the patch made it")
	assert.Empty(t, pod.Finalizers)
	assert.NotContains(t, pod.Annotations, requesterAnnotation)
}

// SPDX-License-Identifier: Apache-2.0

package api

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests are the resources the scheduler reserves for one pod of a template, counted as
// Kubernetes counts them (component-helpers resource/helpers.go PodRequests): every container's
// requests, each init container's while it runs with the restartable (sidecar) init containers
// before it, sidecars also added to the running pod's, the larger of the two, plus the pod's
// overhead; each container's requests as the API server defaults them (ContainerRequests).
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	pod := &corev1.Pod{Spec: *spec.DeepCopy()}
	for _, containers := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range containers {
			containers[i].Resources.Requests = ContainerRequests(&containers[i])
		}
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// ContainerRequests are a container's requests as the API server defaults them: a resource it
// gives only a limit for is requested at the limit (pkg/apis/core/v1/defaults.go SetDefaults_Pod).
func ContainerRequests(c *corev1.Container) corev1.ResourceList {
	out := c.Resources.Requests.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, limit := range c.Resources.Limits {
		if _, given := out[name]; !given {
			out[name] = limit.DeepCopy()
		}
	}
	return out
}

// PodGPUs are the GPUs one pod of a template takes on its node: its PodRequests of
// nvidia.com/gpu, what the scheduler and the summary, plan and PodGroup count.
func PodGPUs(spec *corev1.PodSpec) int64 {
	q := PodRequests(spec)[GPUResourceName]
	return q.Value()
}

// podGPUsPath is where a pod's GPUs are given: the one container's GPU limit when one container
// holds them all, else the pod's containers.
func podGPUsPath(spec *corev1.PodSpec, specPath *field.Path) *field.Path {
	holder := -1
	for i := range spec.Containers {
		if ContainerGPUs(&spec.Containers[i]) > 0 {
			if holder >= 0 {
				return specPath.Child("containers")
			}
			holder = i
		}
	}
	if holder < 0 || len(spec.InitContainers) > 0 && PodGPUs(spec) != ContainerGPUs(&spec.Containers[holder]) {
		return specPath.Child("containers")
	}
	return specPath.Child("containers").Index(holder).Child("resources", "limits").Key(string(GPUResourceName))
}

// gpuCountText is a GPU count in plain decimal, as a user counts devices ("1.5", never the
// canonical "1500m" of resource.Quantity's String).
func gpuCountText(q resource.Quantity) string {
	text := q.AsDec().String() // 2500m is "2.500"
	if strings.Contains(text, ".") {
		text = strings.TrimRight(strings.TrimRight(text, "0"), ".")
	}
	return text
}

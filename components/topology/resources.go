package topology

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// podRequests are the resources the scheduler reserves for one pod, computed as Kubernetes does:
// the containers' requests (a limit stands in for a missing request) plus restartable init
// containers (sidecars), or the largest other init container if that is more.
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	add := func(into corev1.ResourceList, c *corev1.Container) {
		for name, q := range containerRequests(c) {
			sum := into[name]
			sum.Add(q)
			into[name] = sum
		}
	}
	for i := range spec.Containers {
		add(total, &spec.Containers[i])
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(total, c)
			continue
		}
		for name, q := range containerRequests(c) {
			if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
				total[name] = q.DeepCopy()
			}
		}
	}
	return total
}

func containerRequests(c *corev1.Container) corev1.ResourceList {
	out := c.Resources.Requests.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range c.Resources.Limits {
		if _, ok := out[name]; !ok {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// minimalSetResources are the resources of the gang's minimal set: minRoleReplicas x nodeCount
// pods of every serving role. Never the whole service's: Volcano would hold the service back until
// all of it fits.
func minimalSetResources(spec *api.InferenceServiceSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		pods := int64(spec.GangMinimum(role)) * int64(role.NodeCount())
		for name, q := range podRequests(&role.Template.Spec) {
			scaled := q.DeepCopy()
			scaled.Mul(pods)
			sum := total[name]
			sum.Add(scaled)
			total[name] = sum
		}
	}
	return total
}

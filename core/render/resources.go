// SPDX-License-Identifier: Apache-2.0

package render

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

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
		for name, q := range api.PodRequests(&role.Template.Spec) {
			scaled := q.DeepCopy()
			scaled.Mul(pods)
			sum := total[name]
			sum.Add(scaled)
			total[name] = sum
		}
	}
	return total
}

// SPDX-License-Identifier: Apache-2.0

package render

import (
	"maps"
	"strconv"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// roleLabels are the labels shared by every replica of a role.
func roleLabels(serviceName string, role *api.Role) map[string]string {
	return map[string]string{
		LabelService:       serviceName,
		LabelComponentType: string(role.ComponentType),
		LabelRoleName:      role.Name,
		LabelAppName:       role.Name,
		LabelAppComponent:  string(role.ComponentType),
		LabelAppPartOf:     serviceName,
		LabelAppManagedBy:  ManagedBy,
	}
}

// replicaLabels are the labels of one replica's LWS and pods.
func replicaLabels(serviceName string, role *api.Role, replica int32, revision string) map[string]string {
	labels := roleLabels(serviceName, role)
	labels[LabelReplicaIndex] = strconv.Itoa(int(replica))
	labels[LabelRevision] = revision
	labels[LabelAppInstance] = api.LeaderWorkerSetName(serviceName, role.Name, replica)
	return labels
}

// serviceObjectLabels are the labels of a service-wide object: the user's service labels plus ours.
func serviceObjectLabels(svc *api.InferenceService) map[string]string {
	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelService] = svc.Name
	labels[LabelAppPartOf] = svc.Name
	labels[LabelAppManagedBy] = ManagedBy
	return labels
}

// merged returns base with overrides applied, as a new map.
func merged(base, overrides map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(overrides))
	maps.Copy(out, base)
	maps.Copy(out, overrides)
	return out
}

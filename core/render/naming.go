// SPDX-License-Identifier: Apache-2.0

// Package render is the pure core: it turns a validated InferenceService into the exact
// Kubernetes objects to create, typed with the upstream APIs. It imports no Pulumi package, does
// no I/O, and is deterministic. The Pulumi component and the CLI are thin shells over it.
package render

import (
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// Labels the core sets on every LeaderWorkerSet and pod template (docs/design/0000-the-fusioninfer-design.md).
const (
	LabelService       = api.ServiceLabel
	LabelComponentType = api.ReservedLabelPrefix + "component-type"
	LabelRoleName      = api.ReservedLabelPrefix + "role-name"
	LabelReplicaIndex  = api.ReservedLabelPrefix + "replica-index"
	LabelRevision      = api.ReservedLabelPrefix + "revision"

	LabelAppName      = api.LabelAppName
	LabelAppInstance  = api.LabelAppInstance
	LabelAppComponent = api.LabelAppComponent
	LabelAppPartOf    = api.LabelAppPartOf
	LabelAppManagedBy = api.LabelAppManagedBy

	// ManagedBy is the value of app.kubernetes.io/managed-by on every object.
	ManagedBy = "fusioninfer"
)

// AnnotationEndpointPickerRelease on the Endpoint Picker's Deployment names the release it runs
// (endpointPicker.release): what the picker reads, and in which API group, depends on it, and
// `fusioninfer status` without the spec reads it there. On the Deployment only, not its pod
// template: a change of release changes the image and arguments, which roll the pods anyway.
const AnnotationEndpointPickerRelease = api.ReservedLabelPrefix + "endpoint-picker-release"

// Annotations read by pulumi-kubernetes when it creates an object.
const (
	AnnotationPulumiWaitFor   = "pulumi.com/waitFor"
	AnnotationPulumiSkipAwait = "pulumi.com/skipAwait"
	// AnnotationPulumiTimeoutSeconds replaces the kubernetes provider's 10-minute wait for an
	// object (provider/pkg/metadata/overrides.go TimeoutDuration in pulumi-kubernetes).
	AnnotationPulumiTimeoutSeconds = "pulumi.com/timeoutSeconds"
	// WaitForAvailable makes `pulumi up` wait for a LeaderWorkerSet's Available condition.
	WaitForAvailable = "condition=Available"
)

// Suffixes name children relative to the service (Pulumi names children "{component}-{suffix}").
const podGroupSuffix = "podgroup"

func leaderWorkerSetSuffix(roleName string, replica int32) string {
	return api.TaskName(roleName, replica)
}

// clusterScopedName names a service's object that has no namespace (a ClusterRole and its
// binding), which must differ for every namespace and service in the cluster:
// {namespace}-{service}-{what}. That is unambiguous while the namespace holds no "-" (its first
// "-" ends it); a namespace with one is joined with ".", which neither a namespace nor a service
// name can hold (both are DNS labels), so team-a/chat (team-a.chat-...) and team/a-chat
// (team-a-chat-...) no longer share one (issue 55). Names without "." are those stacks deployed
// before hold: kept wherever they were unambiguous (design 0025).
func clusterScopedName(svc *api.InferenceService, what string) string {
	join := "-"
	if strings.Contains(svc.Namespace, "-") {
		join = "."
	}
	return svc.Namespace + join + svc.Name + "-" + what
}

// Package api holds the InferenceService spec: the types users write (in YAML for the CLI, through
// the Pulumi component's Args in Go), their defaults, strict decoding and validation. It imports
// only Kubernetes API types, so every other package can depend on it.
package api

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// Group and Version of the seed-format manifest (seed 000).
	Group      = "fusioninfer.io"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
	Kind       = "InferenceService"
)

// InferenceService is one LLM inference service: the document the CLI reads.
type InferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InferenceServiceSpec `json:"spec"`
}

// ComponentType is the semantic role of a component in the inference pipeline.
type ComponentType string

const (
	ComponentTypeRouter    ComponentType = "router"
	ComponentTypePrefiller ComponentType = "prefiller"
	ComponentTypeDecoder   ComponentType = "decoder"
	ComponentTypeWorker    ComponentType = "worker"
)

// Serving reports whether pods of this type serve model traffic (worker, prefiller, decoder).
func (c ComponentType) Serving() bool {
	return c == ComponentTypeWorker || c == ComponentTypePrefiller || c == ComponentTypeDecoder
}

// InferenceServiceSpec mirrors seed 000's spec, plus the gang policy and await setting
// that DESIGN.md adds.
type InferenceServiceSpec struct {
	// Roles are the logical components of the service, each with a unique name.
	Roles []Role `json:"roles"`
	// SchedulingStrategy applies service-wide scheduling policies.
	SchedulingStrategy *SchedulingStrategy `json:"schedulingStrategy,omitempty"`
	// GangPolicy shapes the shared Volcano PodGroup when gang scheduling is on.
	GangPolicy *GangPolicy `json:"gangPolicy,omitempty"`
	// Await chooses what `pulumi up` waits for: all (default), minimal or none.
	Await AwaitMode `json:"await,omitempty"`
}

// SchedulingStrategy defines pod-level scheduling behaviour.
type SchedulingStrategy struct {
	// SchedulerName is the Kubernetes scheduler; "volcano" turns gang scheduling on.
	SchedulerName string `json:"schedulerName,omitempty"`
}

// GangMode selects how the shared PodGroup expresses the gang.
type GangMode string

const (
	// GangModeSubGroup (default, Volcano >= 1.14): each replica all-or-nothing, at least
	// minRoleReplicas of every role together, extra replicas placed whole when room appears.
	GangModeSubGroup GangMode = "subGroup"
	// GangModeTaskMember is seed 000's literal minTaskMember PodGroup for Volcano < 1.14:
	// nothing is scheduled until the whole service fits.
	GangModeTaskMember GangMode = "taskMember"
)

// GangPolicy configures gang scheduling.
type GangPolicy struct {
	// Mode is subGroup (default) or taskMember.
	Mode GangMode `json:"mode,omitempty"`
	// MinRoleReplicas is, per serving role name, how many replicas must be placed together
	// before any runs (default 1 for each serving role).
	MinRoleReplicas map[string]int32 `json:"minRoleReplicas,omitempty"`
}

// AwaitMode chooses what a deployment waits for.
type AwaitMode string

const (
	// AwaitAll waits for every replica to be Available, like a Deployment.
	AwaitAll AwaitMode = "all"
	// AwaitMinimal waits only for the replicas the gang policy requires; the rest are created
	// after them and come up when capacity appears.
	AwaitMinimal AwaitMode = "minimal"
	// AwaitNone waits for nothing.
	AwaitNone AwaitMode = "none"
)

// Role describes one logical component of the inference pipeline.
type Role struct {
	// Name is a user-chosen unique identifier (e.g. "prefill"); a DNS label.
	Name string `json:"name"`
	// ComponentType is worker, prefiller, decoder or router.
	ComponentType ComponentType `json:"componentType"`

	// Router fields (componentType: router).
	Strategy             string                `json:"strategy,omitempty"`
	HTTPRoute            *runtime.RawExtension `json:"httproute,omitempty"`
	EndpointPickerConfig string                `json:"endpointPickerConfig,omitempty"`

	// Serving fields (worker, prefiller, decoder).

	// Replicas is the number of independent instances (default 1).
	Replicas *int32 `json:"replicas,omitempty"`
	// Multinode spreads each replica across nodeCount pods (one leader, nodeCount-1 workers).
	Multinode *Multinode `json:"multinode,omitempty"`
	// Template is the pod template of every pod of the role.
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
}

// Multinode enables multi-node distributed inference.
type Multinode struct {
	// NodeCount is the number of pods (on distinct nodes) per replica.
	NodeCount int32 `json:"nodeCount"`
}

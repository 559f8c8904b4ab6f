// Package inferenceservice is the Pulumi component fusioninfer:index:InferenceService. It maps
// the objects the pure core (components/topology) builds onto pulumi-kubernetes resources, one
// child per object, and computes the service's status from the children's outputs. It knows no
// topology rule of its own.
package inferenceservice

import (
	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// Args describe one InferenceService. The fields that shape the tree (names, component types,
// replicas, nodeCount, scheduling and gang settings) are plain values; pod templates are Inputs
// and may hold Outputs of other resources, unknown at preview.
type Args struct {
	// ServiceName is the service's name (metadata.name); defaults to the component's name.
	ServiceName string `pulumi:"serviceName,optional"`
	// Namespace of every child; defaults to "default".
	Namespace string `pulumi:"namespace,optional"`
	// Labels are added to every child object.
	Labels map[string]string `pulumi:"labels,optional"`
	// Roles are the logical components of the service.
	Roles []RoleArgs `pulumi:"roles"`
	// SchedulingStrategy applies service-wide scheduling policies: scheduler, Volcano queue,
	// priority class, minResources, network topology.
	SchedulingStrategy *api.SchedulingStrategy `pulumi:"schedulingStrategy,optional"`
	// GangPolicy shapes the shared Volcano PodGroup.
	GangPolicy *GangPolicyArgs `pulumi:"gangPolicy,optional"`
	// Await is what `pulumi up` waits for: all (default), minimal, or none.
	Await string `pulumi:"await,optional"`
	// NodePools are the GPU node pools the roles run on; a karpenter pool becomes a Karpenter
	// NodePool sized for the service.
	NodePools []api.NodePool `pulumi:"nodePools,optional"`
	// DualPodsController installs FMA's dual-pods controller for roles with modelFlexibility.
	DualPodsController *api.DualPodsController `pulumi:"dualPodsController,optional"`
	// RolloutOrder names the roles in the order a rollout updates them (default: decoders,
	// prefillers, workers, then the router); roles it leaves out follow in the default order.
	RolloutOrder []string `pulumi:"rolloutOrder,optional"`
}

// RoleArgs describe one role.
type RoleArgs struct {
	// Name is unique among the roles and a DNS label.
	Name string `pulumi:"name"`
	// ComponentType is worker, prefiller, decoder or router.
	ComponentType string `pulumi:"componentType"`
	// Replicas is the number of independent instances (default 1).
	Replicas *int `pulumi:"replicas,optional"`
	// Multinode spreads each replica over several pods.
	Multinode *MultinodeArgs `pulumi:"multinode,optional"`
	// Template is the pod template of the role's pods; its first container is the model server.
	Template k8scorev1.PodTemplateSpecInput `pulumi:"template,optional"`
	// NetworkTopology constrains the pods of each replica of this role.
	NetworkTopology *api.NetworkTopologyPolicy `pulumi:"networkTopology,optional"`
	// NodePool names the nodePools entry the role's pods run on.
	NodePool string `pulumi:"nodePool,optional"`
	// RolloutStrategy is how a changed template reaches the role's replicas: maxUnavailable (how
	// many update at once, default 25%), maxSurge (0 or 1 per replica) and partition (replicas
	// below it keep their template).
	RolloutStrategy *api.RolloutStrategy `pulumi:"rolloutStrategy,optional"`
	// RestartPolicy is RecreateGroupOnPodRestart (default: a replica restarts whole) or None.
	RestartPolicy string `pulumi:"restartPolicy,optional"`
	// StartupPolicy is LeaderCreated (default) or LeaderReady: when a replica's workers are created.
	StartupPolicy string `pulumi:"startupPolicy,optional"`
	// ModelFlexibility runs a worker role's servers through llm-d's dual pods (sleep/wake).
	ModelFlexibility *api.ModelFlexibility `pulumi:"modelFlexibility,optional"`

	// Router fields (componentType router): see api.Role.

	// Strategy is prefix-cache, kv-cache-utilization, queue-size, lora-affinity or
	// pd-disaggregation; unset, the upstream default mix (pd-disaggregation on prefill/decode).
	Strategy string `pulumi:"strategy,optional"`
	// HTTPRoute is a Gateway API HTTPRouteSpec (parentRefs required); every rule's backend is the pool.
	HTTPRoute map[string]any `pulumi:"httproute,optional"`
	// EndpointPickerConfig is a raw EndpointPickerConfig (YAML) that replaces the strategy's preset.
	EndpointPickerConfig string `pulumi:"endpointPickerConfig,optional"`
	// PoolAPIVersion is v1 (default) or v1alpha2.
	PoolAPIVersion string `pulumi:"poolApiVersion,optional"`
	// FailureMode is FailClose (default) or FailOpen.
	FailureMode string `pulumi:"failureMode,optional"`
	// ShadowService adds a headless Service over the pool's pods.
	ShadowService bool `pulumi:"shadowService,optional"`
	// EndpointPicker sets the Endpoint Picker's image, replicas and resources.
	EndpointPicker *EndpointPickerArgs `pulumi:"endpointPicker,optional"`
}

// EndpointPickerArgs set a router's Endpoint Picker Deployment.
type EndpointPickerArgs struct {
	// Image replaces the strategy's image with a mirror or a patched build of the same EPP.
	Image string `pulumi:"image,optional"`
	// Replicas (default 1); more than one elect a leader.
	Replicas *int `pulumi:"replicas,optional"`
	// Resources of the Endpoint Picker container.
	Resources *ResourcesArgs `pulumi:"resources,optional"`
}

// ResourcesArgs are a container's resource requests and limits, as quantities ("500m", "1Gi").
type ResourcesArgs struct {
	// Requests are what the scheduler reserves, per resource name (cpu, memory).
	Requests map[string]string `pulumi:"requests,optional"`
	// Limits cap what the container may use, per resource name.
	Limits map[string]string `pulumi:"limits,optional"`
}

// MultinodeArgs enable multi-node replicas.
type MultinodeArgs struct {
	// NodeCount is the number of pods (on distinct nodes) per replica.
	NodeCount int `pulumi:"nodeCount"`
}

// GangPolicyArgs shape the shared PodGroup.
type GangPolicyArgs struct {
	// Mode is subGroup (default, Volcano >= 1.14) or taskMember (the fusioninfer design's literal PodGroup).
	Mode string `pulumi:"mode,optional"`
	// MinRoleReplicas is, per role name, how many replicas must start together (default 1).
	MinRoleReplicas map[string]int `pulumi:"minRoleReplicas,optional"`
}

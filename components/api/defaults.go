package api

import lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

const (
	// DefaultNamespace is used when neither the manifest nor the caller names one.
	DefaultNamespace = "default"
	// VolcanoSchedulerName is the scheduler that gang scheduling needs.
	VolcanoSchedulerName = "volcano"
)

// ReplicaCount is the role's replicas, 1 when unset. Narrowed to the int32 of the Kubernetes
// fields it ends in: validation bounds the given value (MaxReplicas) before anything calls this.
func (r *Role) ReplicaCount() int32 {
	if r.Replicas == nil {
		return 1
	}
	return int32(*r.Replicas)
}

// NodeCount is the pods per replica, 1 when multinode is unset.
func (r *Role) NodeCount() int32 {
	if r.Multinode == nil {
		return 1
	}
	return int32(r.Multinode.NodeCount) // bounded by MaxNodeCount in validation
}

// MultiNode reports whether each replica spans several pods.
func (r *Role) MultiNode() bool { return r.NodeCount() >= 2 }

// GangMode is the gang mode, subGroup when unset.
func (s *InferenceServiceSpec) GangMode() GangMode {
	if s.GangPolicy == nil || s.GangPolicy.Mode == "" {
		return GangModeSubGroup
	}
	return s.GangPolicy.Mode
}

// MinRoleReplicas is how many replicas of the role the gang requires together, 1 when unset.
func (s *InferenceServiceSpec) MinRoleReplicas(roleName string) int32 {
	if s.GangPolicy != nil {
		if n, ok := s.GangPolicy.MinRoleReplicas[roleName]; ok {
			return int32(n) // bounded by the role's replicas in validation
		}
	}
	return 1
}

// GangMinimum is how many replicas of the role the gang needs before any of its pods runs:
// minRoleReplicas in subGroup mode; every replica in taskMember mode, whose PodGroup requires the
// whole service.
func (s *InferenceServiceSpec) GangMinimum(role *Role) int32 {
	if s.GangMode() == GangModeTaskMember {
		return role.ReplicaCount()
	}
	return s.MinRoleReplicas(role.Name)
}

// AwaitMode is the await setting, all when unset.
func (s *InferenceServiceSpec) AwaitMode() AwaitMode {
	if s.Await == "" {
		return AwaitAll
	}
	return s.Await
}

// SchedulerName is the service-wide scheduler name, empty when unset.
func (s *InferenceServiceSpec) SchedulerName() string {
	if s.SchedulingStrategy == nil {
		return ""
	}
	return s.SchedulingStrategy.SchedulerName
}

// Disaggregated reports whether the service splits prefill and decode.
func (s *InferenceServiceSpec) Disaggregated() bool {
	for i := range s.Roles {
		if t := s.Roles[i].ComponentType; t == ComponentTypePrefiller || t == ComponentTypeDecoder {
			return true
		}
	}
	return false
}

// GangScheduled reports whether the service is gang scheduled by Volcano (docs/design/0000-the-fusioninfer-design.md):
// any multi-node serving role, prefill/decode disaggregation, or schedulerName volcano.
func (s *InferenceServiceSpec) GangScheduled() bool {
	if s.SchedulerName() == VolcanoSchedulerName || s.Disaggregated() {
		return true
	}
	for i := range s.Roles {
		if s.Roles[i].ComponentType.Serving() && s.Roles[i].MultiNode() {
			return true
		}
	}
	return false
}

// RoleTopologyPolicy is the topology policy of each replica of the role: its own, else the
// service's rolePolicy, else none.
func (s *InferenceServiceSpec) RoleTopologyPolicy(role *Role) *NetworkTopologyPolicy {
	if role.NetworkTopology != nil {
		return role.NetworkTopology
	}
	if s.SchedulingStrategy != nil && s.SchedulingStrategy.NetworkTopology != nil {
		return s.SchedulingStrategy.NetworkTopology.RolePolicy
	}
	return nil
}

// GroupTopologyPolicy is the service-level topology policy, or nil.
func (s *InferenceServiceSpec) GroupTopologyPolicy() *NetworkTopologyPolicy {
	if s.SchedulingStrategy != nil && s.SchedulingStrategy.NetworkTopology != nil {
		return s.SchedulingStrategy.NetworkTopology.GroupPolicy
	}
	return nil
}

// TopologyMode is the policy's mode, hard when unset.
func (p *NetworkTopologyPolicy) TopologyMode() NetworkTopologyMode {
	if p.Mode == "" {
		return NetworkTopologyHard
	}
	return p.Mode
}

// PoolKind is the pool's kind, karpenter when unset.
func (p *NodePool) PoolKind() NodePoolKind {
	if p.Kind == "" {
		return NodePoolKarpenter
	}
	return p.Kind
}

// NodePoolNamed is the pool with that name, or nil.
func (s *InferenceServiceSpec) NodePoolNamed(name string) *NodePool {
	for i := range s.NodePools {
		if s.NodePools[i].Name == name {
			return &s.NodePools[i]
		}
	}
	return nil
}

// RoleNamed is the role with the name, or nil.
func (s *InferenceServiceSpec) RoleNamed(name string) *Role {
	for i := range s.Roles {
		if s.Roles[i].Name == name {
			return &s.Roles[i]
		}
	}
	return nil
}

// Router is the service's router role, or nil.
func (s *InferenceServiceSpec) Router() *Role {
	for i := range s.Roles {
		if s.Roles[i].ComponentType == ComponentTypeRouter {
			return &s.Roles[i]
		}
	}
	return nil
}

// Pool API groups of the two InferencePool versions.
const (
	PoolGroupV1       = "inference.networking.k8s.io"
	PoolGroupV1Alpha2 = "inference.networking.x-k8s.io"
)

// PoolGroup is the API group of the router's InferencePool.
func (r *Role) PoolGroup() string {
	if r.PoolAPIVersion == PoolV1Alpha2 {
		return PoolGroupV1Alpha2
	}
	return PoolGroupV1
}

// PoolFailureMode is the router's failure mode, FailClose when unset.
func (r *Role) PoolFailureMode() FailureMode {
	if r.FailureMode == "" {
		return FailClose
	}
	return r.FailureMode
}

// EndpointPickerReplicas is the router's Endpoint Picker replicas, 1 when unset.
func (r *Role) EndpointPickerReplicas() int32 {
	if r.EndpointPicker == nil || r.EndpointPicker.Replicas == nil {
		return 1
	}
	return int32(*r.EndpointPicker.Replicas) // bounded by MaxEndpointPickerReplicas in validation
}

// EndpointPickerImage is the image the user chose for the Endpoint Picker, empty for the default.
func (r *Role) EndpointPickerImage() string {
	if r.EndpointPicker == nil {
		return ""
	}
	return r.EndpointPicker.Image
}

// RestartPolicyOrDefault is the role's LWS restart policy, RecreateGroupOnPodRestart when unset.
func (r *Role) RestartPolicyOrDefault() lwsv1.RestartPolicyType {
	if r.RestartPolicy == "" {
		return lwsv1.RecreateGroupOnPodRestart
	}
	return r.RestartPolicy
}

// StartupPolicyOrDefault is the role's LWS startup policy, LeaderCreated when unset.
func (r *Role) StartupPolicyOrDefault() lwsv1.StartupPolicyType {
	if r.StartupPolicy == "" {
		return lwsv1.LeaderCreatedStartupPolicy
	}
	return r.StartupPolicy
}

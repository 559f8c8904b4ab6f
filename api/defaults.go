// SPDX-License-Identifier: Apache-2.0

package api

import (
	"cmp"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

const (
	// DefaultNamespace is used when neither the manifest nor the caller names one.
	DefaultNamespace = "default"
	// VolcanoSchedulerName is the scheduler that gang scheduling needs.
	VolcanoSchedulerName = "volcano"
)

// ReplicaCount is the role's replicas, 1 when unset; for an autoscaled role its base,
// autoscaling.minReplicas if set. Narrowed to the int32 of the Kubernetes fields it ends in:
// validation bounds the given value (MaxReplicas) before anything calls this.
func (r *Role) ReplicaCount() int32 { return int32(r.baseReplicas()) }

// baseReplicas is the count ReplicaCount narrows, as given: validation bounds it first.
func (r *Role) baseReplicas() int {
	switch {
	case r.Autoscaling != nil && r.Autoscaling.MinReplicas != nil:
		return *r.Autoscaling.MinReplicas
	case r.Replicas == nil:
		return DefaultRoleReplicas
	}
	return *r.Replicas
}

// Autoscaled reports whether the role has elastic replicas above its base.
func (r *Role) Autoscaled() bool { return r.Autoscaling != nil && r.ComponentType.Serving() }

// AutoscalingMetric is what an autoscaled role's replicas follow: autoscaling.metric, else
// the Endpoint Picker's load (MetricPickerRequests) when a router whose picker exports it fronts
// the role, else none (validation requires one). Empty for a role that follows another.
func (s *InferenceServiceSpec) AutoscalingMetric(role *Role) string {
	switch as := role.Autoscaling; {
	case as == nil:
		return ""
	case as.Follow != nil || as.Metric != "":
		return as.Metric
	case s.Router() != nil && s.Router().EndpointPickerRelease().HoldsRequestsAtZero():
		return MetricPickerRequests
	}
	return ""
}

// ScalesToZero reports whether the role is autoscaled from no replica at all (minReplicas 0).
func (r *Role) ScalesToZero() bool { return r.Autoscaled() && r.baseReplicas() == 0 }

// WakeTimeoutOrDefault is autoscaling.wakeTimeout, its default when unset.
func (a *Autoscaling) WakeTimeoutOrDefault() time.Duration {
	if d, err := time.ParseDuration(a.WakeTimeout); err == nil {
		return d
	}
	return DefaultAutoscalingWakeTimeout
}

// WakeTimeout is how long the router holds a request for a role at zero replicas to wake: the
// longest wakeTimeout of the roles that ScalesToZero, 0 when none does.
func (s *InferenceServiceSpec) WakeTimeout() time.Duration {
	var longest time.Duration
	for i := range s.Roles {
		if s.Roles[i].ScalesToZero() {
			longest = max(longest, s.Roles[i].Autoscaling.WakeTimeoutOrDefault())
		}
	}
	return longest
}

// MaxReplicaCount is the most replicas the role may run: autoscaling.maxReplicas, else its replicas.
func (r *Role) MaxReplicaCount() int32 {
	if r.Autoscaled() {
		return int32(r.Autoscaling.MaxReplicas)
	}
	return r.ReplicaCount()
}

// ElasticReplicaLimit is the most replicas the autoscaler may add above the base.
func (r *Role) ElasticReplicaLimit() int32 { return r.MaxReplicaCount() - r.ReplicaCount() }

// ScaleDownDelayOrDefault is autoscaling.scaleDownDelay, its default when unset.
func (a *Autoscaling) ScaleDownDelayOrDefault() time.Duration {
	if d, err := time.ParseDuration(a.ScaleDownDelay); err == nil {
		return d
	}
	return DefaultAutoscalingScaleDownDelay
}

// ConsolidateAfterOrDefault is a karpenter pool's consolidateAfter, its default when unset.
func (p *NodePool) ConsolidateAfterOrDefault() time.Duration {
	if d, err := time.ParseDuration(p.ConsolidateAfter); err == nil {
		return d
	}
	return DefaultNodePoolConsolidateAfter
}

// CapacityTypeValues are the capacity types a karpenter pool's nodes may be bought as, as its
// NodePool's karpenter.sh/capacity-type requirement lists them: on-demand when unset.
func (p *NodePool) CapacityTypeValues() []string {
	if len(p.CapacityTypes) == 0 {
		return []string{karpenter.CapacityTypeOnDemand}
	}
	return values(p.CapacityTypes...)
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
		return DefaultGangPolicyMode
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
	if role := s.RoleNamed(roleName); role != nil && role.ScalesToZero() {
		return 0 // none to require while it is idle; its elastic replicas are each placed whole
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

// MaxAwaitTimeout bounds awaitTimeout: beyond a day a replica is not loading, it is stuck.
const MaxAwaitTimeout = 24 * time.Hour

// RoleAwaitTimeout is how long `pulumi up` waits for one of the role's replicas: the role's
// awaitTimeout, else the spec's, else the spec's default: long enough for a large model to
// download and load, where the kubernetes provider waits 10 minutes. Validation refuses what does
// not parse.
func (s *InferenceServiceSpec) RoleAwaitTimeout(role *Role) time.Duration {
	for _, v := range []string{role.AwaitTimeout, s.AwaitTimeout} {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return DefaultInferenceServiceSpecAwaitTimeout
}

// AwaitMode is the await setting, all when unset.
func (s *InferenceServiceSpec) AwaitMode() AwaitMode {
	if s.Await == "" {
		return DefaultInferenceServiceSpecAwait
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
		return DefaultNetworkTopologyPolicyMode
	}
	return p.Mode
}

// PoolKind is the pool's kind, karpenter when unset.
func (p *NodePool) PoolKind() NodePoolKind {
	if p.Kind == "" {
		return DefaultNodePoolKind
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
	if cmp.Or(r.PoolAPIVersion, DefaultRolePoolAPIVersion) == PoolV1Alpha2 {
		return PoolGroupV1Alpha2
	}
	return PoolGroupV1
}

// PoolFailureMode is the router's failure mode, FailClose when unset.
func (r *Role) PoolFailureMode() FailureMode {
	if r.FailureMode == "" {
		return DefaultRoleFailureMode
	}
	return r.FailureMode
}

// Mode is where the router's requests enter: its routerMode, else gateway when it has an
// httproute and standalone when it has none (llm-d-router v0.10.0's charts: the
// llm-d-router-standalone chart runs the proxy beside the picker, the gateway chart needs a
// Gateway and an HTTPRoute).
func (r *Role) Mode() RouterMode {
	switch {
	case r.RouterMode != "":
		return r.RouterMode
	case r.HTTPRoute != nil:
		return RouterGateway
	}
	return RouterStandalone
}

// Standalone reports whether the router serves requests through its own proxy.
func (r *Role) Standalone() bool { return r.Mode() == RouterStandalone }

// EndpointPickerReplicas is the router's Endpoint Picker replicas, 1 when unset.
func (r *Role) EndpointPickerReplicas() int32 {
	if r.EndpointPicker == nil || r.EndpointPicker.Replicas == nil {
		return DefaultEndpointPickerReplicas
	}
	return int32(*r.EndpointPicker.Replicas) // bounded by MaxEndpointPickerReplicas in validation
}

// EndpointPickerLeaderElection: the router's Endpoint Picker replicas elect a leader, and only it
// is Ready. A gateway-mode router's do, where the release can (eppconfig.Release.ElectsLeader),
// as the releases' charts run them; a standalone router's run active-active, every replica Ready
// and picking from its own datastore, because each pod's proxy is a door of the router's Service
// and a door must not wait for a lease (docs/design/0044-a-standalone-door-that-stays-open.md).
func (r *Role) EndpointPickerLeaderElection() bool {
	return r.EndpointPickerReplicas() > 1 && r.EndpointPickerRelease().ElectsLeader() && !r.Standalone()
}

// EndpointPickerRelease is the router's Endpoint Picker release, llm-d-router v0.10.0 when unset.
func (r *Role) EndpointPickerRelease() EndpointPickerRelease {
	if r.EndpointPicker == nil {
		return DefaultEndpointPickerRelease
	}
	return cmp.Or(r.EndpointPicker.Release, DefaultEndpointPickerRelease)
}

// EndpointPickerCRDGroups are the API groups in which the cluster has the InferenceObjective and
// InferenceModelRewrite CRDs, as the router says, both (the Platform's) when unset.
func (r *Role) EndpointPickerCRDGroups() InferenceCRDGroups {
	if r.EndpointPicker == nil {
		return DefaultEndpointPickerCRDGroups
	}
	return cmp.Or(r.EndpointPicker.CRDGroups, DefaultEndpointPickerCRDGroups)
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
		return DefaultRoleRestartPolicy
	}
	return r.RestartPolicy
}

// StartupPolicyOrDefault is the role's LWS startup policy, LeaderCreated when unset.
func (r *Role) StartupPolicyOrDefault() lwsv1.StartupPolicyType {
	if r.StartupPolicy == "" {
		return DefaultRoleStartupPolicy
	}
	return r.StartupPolicy
}

// MaxSurge is the role's per-replica surge, 0 when unset.
func (r *Role) MaxSurge() int32 {
	if r.RolloutStrategy == nil || r.RolloutStrategy.MaxSurge == nil {
		return DefaultRolloutStrategyMaxSurge
	}
	return int32(*r.RolloutStrategy.MaxSurge)
}

// Pinned reports whether a replica keeps its current pod template (its index is below the
// role's rolloutStrategy.partition).
func (r *Role) Pinned(replica int32) bool {
	return r.RolloutStrategy != nil && r.RolloutStrategy.Partition != nil && int(replica) < *r.RolloutStrategy.Partition
}

// MaxUnavailableOrDefault is the role's maxUnavailable, 25% when unset: a quarter of its
// replicas, as a Kubernetes Deployment's.
func (r *Role) MaxUnavailableOrDefault() intstr.IntOrString {
	if r.RolloutStrategy == nil || r.RolloutStrategy.MaxUnavailable == nil {
		return intstr.FromString(DefaultRolloutStrategyMaxUnavailable)
	}
	return *r.RolloutStrategy.MaxUnavailable
}

// RolloutBatchSize is how many of the role's replicas a rollout updates at once: maxUnavailable
// resolved against the replicas (a percent rounded down), at least 1 (with maxUnavailable 0 and
// maxSurge 1 each replica of the batch surges, so none is unavailable) and at most the replicas.
// On a role that was not validated, a maxUnavailable that is no count or percent counts as the
// default, as ScaleDownDelayOrDefault treats a duration that does not parse.
func (r *Role) RolloutBatchSize() int32 {
	return min(max(r.maxUnavailableOf(r.ReplicaCount()), 1), r.ReplicaCount())
}

// ElasticMaxUnavailable is the maxUnavailable of an autoscaled role's elastic LWS, as a count: the
// role's maxUnavailable resolved against the most elastic replicas (a percent rounded down), at
// least 1 unless a surge keeps every replica serving. LWS would resolve a percent against the
// replicas the autoscaler set at that moment, and its webhook refuses a 0 without a surge: "25%"
// of 3 elastic replicas failed a rollout (tests/e2e/autoscaling).
func (r *Role) ElasticMaxUnavailable() int32 {
	n := r.maxUnavailableOf(r.ElasticReplicaLimit())
	if r.MaxSurge() > 0 {
		return n
	}
	return max(n, 1)
}

// maxUnavailableOf is the role's maxUnavailable against replicas: a count as it is, or a percent
// rounded down; the default's when the role's is neither (validation refuses it).
func (r *Role) maxUnavailableOf(replicas int32) int32 {
	for _, v := range []intstr.IntOrString{r.MaxUnavailableOrDefault(), intstr.FromString(DefaultRolloutStrategyMaxUnavailable)} {
		if n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(replicas), false); err == nil {
			return int32(n)
		}
	}
	return 0
}

// RolloutBatched reports whether rollouts go in batches: only when `pulumi up` awaits every
// replica (spec.await all), since a batch holds the next one back only by being awaited.
func (s *InferenceServiceSpec) RolloutBatched() bool { return s.AwaitMode() == AwaitAll }

// RolloutFirstBatch is how many of the role's replicas go in the first rollout batch, ahead of
// the role's own batches: in a gang-scheduled service the gang's minimal set, whole (batches
// order creation too, and Volcano starts none of the gang's pods until all of them exist, so
// holding one back behind another would deadlock the first deployment); none otherwise.
func (s *InferenceServiceSpec) RolloutFirstBatch(role *Role) int32 {
	if !s.GangScheduled() {
		return 0
	}
	return s.GangMinimum(role)
}

// PriorityClassName is schedulingStrategy.priorityClassName, "" when unset: the priority of the
// PodGroup and of every pod the service runs (its servers and its Endpoint Picker).
func (s *InferenceServiceSpec) PriorityClassName() string {
	if s.SchedulingStrategy == nil {
		return ""
	}
	return s.SchedulingStrategy.PriorityClassName
}

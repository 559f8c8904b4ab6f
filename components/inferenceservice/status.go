// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
)

// Phase is a role's high-level lifecycle stage (the fusioninfer design's ComponentPhase), in the
// words `fusioninfer status` uses too (core/rolestatus).
type Phase = string

// Phases derived from the role's LeaderWorkerSets (rolestatus.Of).
const (
	PhasePending      Phase = string(rolestatus.Pending)
	PhaseProgressing  Phase = string(rolestatus.Progressing)
	PhaseRunning      Phase = string(rolestatus.Running)
	PhaseFailed       Phase = string(rolestatus.Failed)
	PhaseUnknown      Phase = string(rolestatus.Unknown)
	PhaseScaledToZero Phase = string(rolestatus.ScaledToZero)
)

// RoleStatus is the observed state of one serving role, computed from its LWSs' status.
type RoleStatus struct {
	// DesiredReplicas is the role's replicas: its base, and for an autoscaled role the elastic
	// replicas the autoscaler asked for when the elastic LWS was last read.
	DesiredReplicas int `pulumi:"desiredReplicas"`
	// ReadyReplicas is the number of replicas whose every pod is ready (LWS group readiness).
	ReadyReplicas int `pulumi:"readyReplicas"`
	// NodesPerReplica is the pods of each replica: multinode.nodeCount (1 when single-node).
	NodesPerReplica int `pulumi:"nodesPerReplica"`
	// TotalPods is the role's pods: desiredReplicas x nodesPerReplica.
	TotalPods int `pulumi:"totalPods"`
	// ReadyPods is the number of pods of ready replicas; LWS does not report the pods of a replica
	// that is only partly up, so those are not counted.
	ReadyPods int `pulumi:"readyPods"`
	// ObservedReplicas is the number of replicas whose LWS reported a status when it was last read: every
	// awaited one; a replica `pulumi up` does not wait for (await minimal or none) is read when it
	// is created, before its controller has seen it, and again at `pulumi up --refresh`.
	ObservedReplicas int `pulumi:"observedReplicas"`
	// Phase is the role's phase: Unknown, Pending, Progressing, Running or Failed, as `fusioninfer status` says it.
	Phase string `pulumi:"phase"`
}

// observeLeaderWorkerSet reads the status of an LWS from the resource's outputs, as the typed
// object rolestatus reads (the CLI reads the same from the cluster).
func observeLeaderWorkerSet(fields map[string]any) rolestatus.Replica {
	var lws lwsv1.LeaderWorkerSet
	spec, _ := fields["spec"].(map[string]any) // only its replicas: the templates are not read
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"replicas": spec["replicas"]}, "status": fields["status"]})
	if err == nil {
		err = json.Unmarshal(data, &lws)
	}
	if err != nil { // not an LWS's shape: nothing observed
		return rolestatus.Replica{Replicas: 1}
	}
	return rolestatus.OfLeaderWorkerSet(&lws)
}

func asInt(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	case int32:
		return int(n)
	}
	return 0
}

// roleStatus derives a role's status from its LWSs (one per base replica, each with replicas 1,
// and an autoscaled role's elastic LWS with the replicas its autoscaler set); the phase is
// rolestatus.Of's. A replica whose resource failed (its wait timed out or saw a failure) makes the
// role Failed: `pulumi up` fails with that error, and the outputs say which role it was. LWS v0.8
// reports no failure condition, so Failed is never read from the status.
func roleStatus(nodesPerReplica int, replicas []rolestatus.Replica) RoleStatus {
	s := RoleStatus{NodesPerReplica: nodesPerReplica}
	for _, r := range replicas {
		s.DesiredReplicas += r.Replicas
		if r.Observed {
			s.ObservedReplicas += r.Replicas
		}
		s.ReadyReplicas += r.ReadyReplicas
	}
	s.TotalPods = s.DesiredReplicas * nodesPerReplica
	s.ReadyPods = s.ReadyReplicas * nodesPerReplica
	s.Phase = string(rolestatus.Of(replicas))
	return s
}

// RoleStatusOutput is an Output of RoleStatus.
type RoleStatusOutput struct{ *pulumi.OutputState }

// ElementType implements pulumi.Output.
func (RoleStatusOutput) ElementType() reflect.Type { return reflect.TypeOf(RoleStatus{}) }

// RoleStatusMapOutput is an Output of the status of every serving role, by role name.
type RoleStatusMapOutput struct{ *pulumi.OutputState }

// ElementType implements pulumi.Output.
func (RoleStatusMapOutput) ElementType() reflect.Type { return reflect.TypeOf(map[string]RoleStatus{}) }

// ToRoleStatusMapOutput implements RoleStatusMapInput.
func (o RoleStatusMapOutput) ToRoleStatusMapOutput() RoleStatusMapOutput { return o }

// ToRoleStatusMapOutputWithContext implements RoleStatusMapInput.
func (o RoleStatusMapOutput) ToRoleStatusMapOutputWithContext(context.Context) RoleStatusMapOutput {
	return o
}

// MapIndex is the status of one role.
func (o RoleStatusMapOutput) MapIndex(role pulumi.StringInput) RoleStatusOutput {
	return pulumi.All(o, role).ApplyT(func(vs []any) RoleStatus {
		return vs[0].(map[string]RoleStatus)[vs[1].(string)]
	}).(RoleStatusOutput)
}

func init() {
	pulumi.RegisterOutputType(RoleStatusOutput{})
	pulumi.RegisterOutputType(RoleStatusMapOutput{})
}

// setRouterOutputs names the router's objects and reads its readiness from the Endpoint
// Picker Deployment's outputs.
func setRouterOutputs(ctx *pulumi.Context, component *InferenceService, shape *api.InferenceService, refs []render.Ref) {
	var poolName, eppServiceName, routeName string
	ready := pulumi.Bool(false).ToBoolOutput()
	if shape.Spec.Router() != nil {
		poolName, eppServiceName = api.PoolName(shape.Name), api.EndpointPickerName(shape.Name)
		if !shape.Spec.Router().Standalone() { // a standalone router has no HTTPRoute
			routeName = api.HTTPRouteName(shape.Name)
		}
		for _, ref := range refs {
			if ref.TypeMeta == render.KindDeployment {
				epp := component.Children[ref.Suffix]
				ready = settle(ctx, []pulumi.Output{epp.OtherFields, epp.Metadata.Generation()}).ApplyT(func(v any) bool {
					epp := v.(settled)
					fields, _ := epp.values[0].(map[string]any)
					generation, _ := epp.values[1].(*int)
					return deploymentReady(fields, generation)
				}).(pulumi.BoolOutput)
			}
		}
	}
	component.PoolName = pulumi.String(poolName).ToStringOutput()
	component.EndpointPickerServiceName = pulumi.String(eppServiceName).ToStringOutput()
	component.HTTPRouteName = pulumi.String(routeName).ToStringOutput()
	component.RouterReady = ready
}

// deploymentReady reads a Deployment's outputs: its controller has seen the current spec and at
// least one pod of it is ready. One is enough: with leader election only the leader is ready, and
// the Recreate strategy removes the old pods before it starts new ones.
func deploymentReady(fields map[string]any, generation *int) bool {
	status, ok := fields["status"].(map[string]any)
	if !ok || generation == nil {
		return false
	}
	return asInt(status["observedGeneration"]) >= *generation && asInt(status["readyReplicas"]) >= 1
}

package inferenceservice

import (
	"context"
	"reflect"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/topology"
)

// Phase is a role's high-level lifecycle stage (the fusioninfer design's ComponentPhase).
type Phase = string

// Phases derived from the role's LeaderWorkerSets (see roleStatus).
const (
	PhasePending   Phase = "Pending"
	PhaseDeploying Phase = "Deploying"
	PhaseRunning   Phase = "Running"
	PhaseFailed    Phase = "Failed"
	PhaseUnknown   Phase = "Unknown"
)

// RoleStatus is the observed state of one serving role, computed from its LWSs' status.
type RoleStatus struct {
	// DesiredReplicas is the role's replicas: its base, and for an autoscaled role the elastic
	// replicas the autoscaler asked for when the elastic LWS was last read.
	DesiredReplicas int `pulumi:"desiredReplicas"`
	// ReadyReplicas counts replicas whose every pod is ready (LWS group readiness).
	ReadyReplicas int `pulumi:"readyReplicas"`
	// NodesPerReplica is multinode.nodeCount (1 when single-node).
	NodesPerReplica int `pulumi:"nodesPerReplica"`
	// TotalPods is desiredReplicas x nodesPerReplica.
	TotalPods int `pulumi:"totalPods"`
	// ReadyPods counts the pods of ready replicas; LWS does not report the pods of a replica
	// that is only partly up, so those are not counted.
	ReadyPods int `pulumi:"readyPods"`
	// ObservedReplicas counts replicas whose LWS reported a status when it was last read: every
	// awaited one; a replica `pulumi up` does not wait for (await minimal or none) is read when it
	// is created, before its controller has seen it, and again at `pulumi up --refresh`.
	ObservedReplicas int `pulumi:"observedReplicas"`
	// Phase is Pending, Deploying, Running, Failed or Unknown.
	Phase string `pulumi:"phase"`
}

// lwsObservation is what one LeaderWorkerSet's status says.
type lwsObservation struct {
	// Observed is false when the LWS carries no status yet: its controller has not seen it.
	Observed bool
	// Replicas is the LWS's spec.replicas: 1 for a base replica, the autoscaler's count for an
	// elastic LWS.
	Replicas      int
	ReadyReplicas int
	Available     bool
	Updating      bool
	// Failed is true when the LWS's resource failed: its wait timed out or saw a failure, or the
	// deployment stopped before it was registered.
	Failed bool
}

// observeLeaderWorkerSet reads the status of an LWS from the resource's outputs.
func observeLeaderWorkerSet(fields map[string]any) lwsObservation {
	replicas := 1
	if spec, ok := fields["spec"].(map[string]any); ok && spec["replicas"] != nil {
		replicas = asInt(spec["replicas"])
	}
	status, ok := fields["status"].(map[string]any)
	if !ok {
		return lwsObservation{Replicas: replicas}
	}
	obs := lwsObservation{Observed: true, Replicas: replicas, ReadyReplicas: min(asInt(status["readyReplicas"]), replicas)}
	conditions, _ := status["conditions"].([]any)
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["status"] != "True" {
			continue
		}
		switch cond["type"] {
		case "Available":
			obs.Available = true
		case "UpdateInProgress":
			obs.Updating = true
		}
	}
	return obs
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
// and an autoscaled role's elastic LWS with the replicas its autoscaler set).
// The phase rules:
//   - Failed: an LWS's resource failed (its wait timed out or saw a failure): `pulumi up` fails
//     with that error, and the outputs say which role it was.
//   - Unknown: no LWS has a status yet (no controller has observed any).
//   - Running: every replica is observed and ready, and none is being updated.
//   - Pending: no replica is ready and none is being updated.
//   - Deploying: anything in between: some replicas ready, a rolling update under way, or replicas
//     not yet observed beside ready ones (await minimal: the minimal set serves, the rest come).
//
// LWS v0.8 reports no failure condition, so Failed is never derived from status: a replica that
// cannot start shows as Pending until `pulumi up`'s wait for it times out.
func roleStatus(nodesPerReplica int, replicas []lwsObservation) RoleStatus {
	s := RoleStatus{NodesPerReplica: nodesPerReplica}
	updating, failed := false, false
	for _, r := range replicas {
		updating = updating || r.Updating
		failed = failed || r.Failed
		s.DesiredReplicas += r.Replicas
		if r.Observed {
			s.ObservedReplicas += r.Replicas
		}
		s.ReadyReplicas += r.ReadyReplicas
	}
	s.TotalPods = s.DesiredReplicas * nodesPerReplica
	s.ReadyPods = s.ReadyReplicas * nodesPerReplica
	switch {
	case failed:
		s.Phase = PhaseFailed
	case s.ObservedReplicas == 0:
		s.Phase = PhaseUnknown
	case s.ReadyReplicas == s.DesiredReplicas && !updating:
		s.Phase = PhaseRunning
	case s.ReadyReplicas == 0 && !updating:
		s.Phase = PhasePending
	default:
		s.Phase = PhaseDeploying
	}
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
func setRouterOutputs(ctx *pulumi.Context, component *InferenceService, shape *api.InferenceService, refs []topology.Ref) {
	var poolName, eppServiceName, routeName string
	ready := pulumi.Bool(false).ToBoolOutput()
	if shape.Spec.Router() != nil {
		poolName, eppServiceName, routeName = api.PoolName(shape.Name), api.EndpointPickerName(shape.Name), api.HTTPRouteName(shape.Name)
		for _, ref := range refs {
			if ref.TypeMeta == topology.KindDeployment {
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

package provider

import (
	"fmt"
	"math"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/mapper"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

// Args are the component's inputs as the provider receives them from any language: the Go
// component's Args with each role's pod template as the plain pulumi-kubernetes struct, which the
// schema then points at the kubernetes package's PodTemplateSpec.
type Args struct {
	ServiceName        string                           `pulumi:"serviceName,optional"`
	Namespace          string                           `pulumi:"namespace,optional"`
	Labels             map[string]string                `pulumi:"labels,optional"`
	Roles              []RoleArgs                       `pulumi:"roles"`
	SchedulingStrategy *api.SchedulingStrategy          `pulumi:"schedulingStrategy,optional"`
	GangPolicy         *inferenceservice.GangPolicyArgs `pulumi:"gangPolicy,optional"`
	Await              string                           `pulumi:"await,optional"`
	NodePools          []api.NodePool                   `pulumi:"nodePools,optional"`
	DualPodsController *api.DualPodsController          `pulumi:"dualPodsController,optional"`
	RolloutOrder       []string                         `pulumi:"rolloutOrder,optional"`
}

// RoleArgs are one role's inputs; see inferenceservice.RoleArgs.
type RoleArgs struct {
	Name                 string                               `pulumi:"name"`
	ComponentType        string                               `pulumi:"componentType"`
	Replicas             *int                                 `pulumi:"replicas,optional"`
	Multinode            *inferenceservice.MultinodeArgs      `pulumi:"multinode,optional"`
	Template             pulumi.AnyOutput                     `pulumi:"template,optional"`
	NetworkTopology      *api.NetworkTopologyPolicy           `pulumi:"networkTopology,optional"`
	NodePool             string                               `pulumi:"nodePool,optional"`
	RolloutStrategy      *RolloutStrategyArgs                 `pulumi:"rolloutStrategy,optional"`
	RestartPolicy        string                               `pulumi:"restartPolicy,optional"`
	StartupPolicy        string                               `pulumi:"startupPolicy,optional"`
	ModelFlexibility     *api.ModelFlexibility                `pulumi:"modelFlexibility,optional"`
	Strategy             string                               `pulumi:"strategy,optional"`
	HTTPRoute            map[string]any                       `pulumi:"httproute,optional"`
	EndpointPickerConfig string                               `pulumi:"endpointPickerConfig,optional"`
	PoolAPIVersion       string                               `pulumi:"poolApiVersion,optional"`
	FailureMode          string                               `pulumi:"failureMode,optional"`
	ShadowService        bool                                 `pulumi:"shadowService,optional"`
	EndpointPicker       *inferenceservice.EndpointPickerArgs `pulumi:"endpointPicker,optional"`
}

// RolloutStrategyArgs are a role's rollout settings; see api.RolloutStrategy.
type RolloutStrategyArgs struct {
	// MaxUnavailable is how many of the role's replicas a rollout updates at once: a count, or a
	// percent of the replicas rounded down ("25%", the default); at least 1. The replicas' LWSs
	// update in batches of this size, each batch after the previous one is Available.
	MaxUnavailable any `pulumi:"maxUnavailable,optional"`
	// MaxSurge is 0 (default: a replica's old group goes before its new one comes) or 1 (the new
	// group comes up first, on extra GPUs, so the replica keeps serving).
	MaxSurge *int `pulumi:"maxSurge,optional"`
	// Partition keeps the replicas with an index below it on their current pod template (Pulumi
	// ignores template changes on them): a canary on the others. Lower it to roll on.
	Partition *int `pulumi:"partition,optional"`
}

// componentArgs are the Go component's Args for these inputs.
func (a *Args) componentArgs() (*inferenceservice.Args, error) {
	out := &inferenceservice.Args{
		ServiceName: a.ServiceName, Namespace: a.Namespace, Labels: a.Labels, SchedulingStrategy: a.SchedulingStrategy,
		GangPolicy: a.GangPolicy, Await: a.Await, NodePools: a.NodePools, DualPodsController: a.DualPodsController,
		RolloutOrder: a.RolloutOrder,
	}
	for i, r := range a.Roles {
		role := inferenceservice.RoleArgs{
			Name: r.Name, ComponentType: r.ComponentType, Replicas: r.Replicas, Multinode: r.Multinode,
			NetworkTopology: r.NetworkTopology, NodePool: r.NodePool, RestartPolicy: r.RestartPolicy, StartupPolicy: r.StartupPolicy,
			ModelFlexibility: r.ModelFlexibility, Strategy: r.Strategy, HTTPRoute: r.HTTPRoute,
			EndpointPickerConfig: r.EndpointPickerConfig, PoolAPIVersion: r.PoolAPIVersion, FailureMode: r.FailureMode,
			ShadowService: r.ShadowService, EndpointPicker: r.EndpointPicker,
		}
		if rs := r.RolloutStrategy; rs != nil {
			maxUnavailable, err := intOrString(rs.MaxUnavailable)
			if err != nil {
				return nil, fmt.Errorf("spec.roles[%d].rolloutStrategy.maxUnavailable: %w", i, err)
			}
			role.RolloutStrategy = &api.RolloutStrategy{MaxUnavailable: maxUnavailable, MaxSurge: rs.MaxSurge, Partition: rs.Partition}
		}
		if r.Template.OutputState != nil { // absent on a router
			role.Template = podTemplate(r.Template)
		}
		out.Roles = append(out.Roles, role)
	}
	return out, nil
}

// intOrString is a count or a percent as a language SDK sends it: a number or a string.
func intOrString(v any) (*intstr.IntOrString, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return ptr.To(intstr.FromString(v)), nil
	case float64:
		if v != math.Trunc(v) {
			return nil, fmt.Errorf("want a whole number or a percent, got %v", v)
		}
		return ptr.To(intstr.FromInt32(int32(v))), nil
	case int:
		return ptr.To(intstr.FromInt32(int32(v))), nil
	default:
		return nil, fmt.Errorf("want a number or a percent string, got %T", v)
	}
}

// podTemplate is a template received as a map (which may hold values unknown at preview) as the
// pulumi-kubernetes input the component takes.
func podTemplate(in pulumi.AnyOutput) k8scorev1.PodTemplateSpecOutput {
	return in.ApplyT(func(v any) (k8scorev1.PodTemplateSpec, error) {
		var out k8scorev1.PodTemplateSpec
		m, ok := v.(map[string]any)
		if !ok {
			return out, fmt.Errorf("template: want an object, got %T", v)
		}
		err := templateMapper.Decode(m, &out)
		return out, err
	}).(k8scorev1.PodTemplateSpecOutput)
}

var templateMapper = mapper.New(&mapper.Opts{IgnoreMissing: true})

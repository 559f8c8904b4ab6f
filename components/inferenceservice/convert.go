package inferenceservice

import (
	"encoding/json"
	"fmt"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/mapper"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// service is the spec the Args describe, without pod templates.
// Conversion errors (a quantity that does not parse) carry their field paths.
func (a *Args) service(componentName string) (*api.InferenceService, field.ErrorList) {
	svc := &api.InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: api.APIVersion, Kind: api.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: a.ServiceName, Namespace: a.Namespace, Labels: a.Labels},
		Spec: api.InferenceServiceSpec{Await: api.AwaitMode(a.Await), NodePools: a.NodePools, DualPodsController: a.DualPodsController,
			RolloutOrder: a.RolloutOrder},
	}
	if svc.Name == "" {
		svc.Name = componentName
	}
	svc.Spec.SchedulingStrategy = a.SchedulingStrategy
	if a.GangPolicy != nil {
		gp := &api.GangPolicy{Mode: api.GangMode(a.GangPolicy.Mode)}
		for role, n := range a.GangPolicy.MinRoleReplicas {
			if gp.MinRoleReplicas == nil {
				gp.MinRoleReplicas = map[string]int32{}
			}
			gp.MinRoleReplicas[role] = int32(n)
		}
		svc.Spec.GangPolicy = gp
	}
	var errs field.ErrorList
	for i := range a.Roles {
		r := &a.Roles[i]
		role := api.Role{Name: r.Name, ComponentType: api.ComponentType(r.ComponentType), NetworkTopology: r.NetworkTopology, NodePool: r.NodePool,
			ModelFlexibility: r.ModelFlexibility, RestartPolicy: lwsv1.RestartPolicyType(r.RestartPolicy), StartupPolicy: lwsv1.StartupPolicyType(r.StartupPolicy),
			RolloutStrategy: r.RolloutStrategy}
		errs = append(errs, routerToAPI(r, &role, field.NewPath("spec", "roles").Index(i))...)
		if r.Replicas != nil {
			role.Replicas = ptr.To(int32(*r.Replicas))
		}
		if r.Multinode != nil {
			role.Multinode = &api.Multinode{NodeCount: int32(r.Multinode.NodeCount)}
		}
		svc.Spec.Roles = append(svc.Spec.Roles, role)
	}
	return svc, errs
}

// templateMapper encodes pulumi-kubernetes structs by their `pulumi` tags, which are the
// Kubernetes field names; nil fields are simply absent.
var templateMapper = mapper.New(&mapper.Opts{IgnoreMissing: true})

// templateToAPI converts a resolved pulumi-kubernetes pod template to the upstream API type.
// Decoding is strict, so a field the API type does not know is an error, never dropped.
func templateToAPI(tpl k8scorev1.PodTemplateSpec) (*corev1.PodTemplateSpec, error) {
	m, mapErr := templateMapper.Encode(tpl)
	if mapErr != nil {
		return nil, mapErr
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out corev1.PodTemplateSpec
	strictErrs, err := sigsjson.UnmarshalStrict(data, &out)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("pod template: %v", strictErrs)
	}
	return &out, nil
}

// templateFromAPI converts an upstream pod template to a pulumi-kubernetes input.
func templateFromAPI(tpl *corev1.PodTemplateSpec) (k8scorev1.PodTemplateSpecInput, error) {
	data, err := json.Marshal(tpl)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	var out k8scorev1.PodTemplateSpec
	if mapErr := templateMapper.Decode(m, &out); mapErr != nil {
		return nil, mapErr
	}
	return pulumi.ToOutput(out).(k8scorev1.PodTemplateSpecOutput), nil
}

// ArgsFromService builds component Args from a decoded manifest, so a program can deploy the
// same file the CLI renders.
func ArgsFromService(svc *api.InferenceService) (*Args, error) {
	args := &Args{
		ServiceName: svc.Name,
		Namespace:   svc.Namespace,
		Labels:      svc.Labels,
		Await:       string(svc.Spec.Await),
		NodePools:   svc.Spec.NodePools,

		DualPodsController: svc.Spec.DualPodsController,
		RolloutOrder:       svc.Spec.RolloutOrder,
	}
	args.SchedulingStrategy = svc.Spec.SchedulingStrategy
	if g := svc.Spec.GangPolicy; g != nil {
		args.GangPolicy = &GangPolicyArgs{Mode: string(g.Mode)}
		for role, n := range g.MinRoleReplicas {
			if args.GangPolicy.MinRoleReplicas == nil {
				args.GangPolicy.MinRoleReplicas = map[string]int{}
			}
			args.GangPolicy.MinRoleReplicas[role] = int(n)
		}
	}
	for i := range svc.Spec.Roles {
		r := &svc.Spec.Roles[i]
		role := RoleArgs{Name: r.Name, ComponentType: string(r.ComponentType), NetworkTopology: r.NetworkTopology, NodePool: r.NodePool,
			ModelFlexibility: r.ModelFlexibility, RestartPolicy: string(r.RestartPolicy), StartupPolicy: string(r.StartupPolicy),
			RolloutStrategy: r.RolloutStrategy}
		if err := routerFromAPI(r, &role); err != nil {
			return nil, fmt.Errorf("spec.roles[%d].httproute: %w", i, err)
		}
		if r.Replicas != nil {
			role.Replicas = ptr.To(int(*r.Replicas))
		}
		if r.Multinode != nil {
			role.Multinode = &MultinodeArgs{NodeCount: int(r.Multinode.NodeCount)}
		}
		if r.Template != nil {
			tpl, err := templateFromAPI(r.Template)
			if err != nil {
				return nil, fmt.Errorf("spec.roles[%d].template: %w", i, err)
			}
			role.Template = tpl
		}
		args.Roles = append(args.Roles, role)
	}
	return args, nil
}

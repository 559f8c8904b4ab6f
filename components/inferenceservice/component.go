// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/env"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/kubetoken"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
)

// TypeToken is the component's Pulumi type.
const TypeToken = "fusioninfer:index:InferenceService"

// InferenceService is an LLM inference service on Kubernetes: a LeaderWorkerSet per replica of
// every serving role and, when gang scheduled, one shared Volcano PodGroup.
type InferenceService struct {
	pulumi.ResourceState

	// ServiceName is the service's name (metadata.name of the manifest).
	ServiceName pulumi.StringOutput `pulumi:"serviceName"`
	// Namespace of every child.
	Namespace pulumi.StringOutput `pulumi:"namespace"`
	// GangScheduled is true when the pods are gang scheduled by Volcano.
	GangScheduled pulumi.BoolOutput `pulumi:"gangScheduled"`
	// PodGroupName is the shared PodGroup's name, empty when not gang scheduled.
	PodGroupName pulumi.StringOutput `pulumi:"podGroupName"`
	// NodePoolNames are the Karpenter NodePools made for the service's karpenter pools.
	NodePoolNames pulumi.StringArrayOutput `pulumi:"nodePoolNames"`
	// LeaderWorkerSetNames lists, per serving role, the names of its LWSs in replica order.
	LeaderWorkerSetNames pulumi.StringArrayMapOutput `pulumi:"leaderWorkerSetNames"`
	// Status is, per serving role, its replicas, pods and phase from the LWSs' status.
	Status RoleStatusMapOutput `pulumi:"status"`
	// GPUsAtFullSize are the GPUs of every replica of every role.
	GPUsAtFullSize pulumi.IntOutput `pulumi:"gpusAtFullSize"`
	// GPUsMinimal are the GPUs of the gang's minimal set (minRoleReplicas of every role): what
	// the cluster needs before anything runs. Zero when the service is not gang scheduled.
	GPUsMinimal pulumi.IntOutput `pulumi:"gpusMinimal"`
	// PoolName is the router's InferencePool, empty without a router.
	PoolName pulumi.StringOutput `pulumi:"poolName"`
	// EndpointPickerServiceName is the router's Endpoint Picker Service, empty without a router.
	EndpointPickerServiceName pulumi.StringOutput `pulumi:"endpointPickerServiceName"`
	// HTTPRouteName is the router's HTTPRoute, empty without a router or with a standalone one.
	HTTPRouteName pulumi.StringOutput `pulumi:"httpRouteName"`
	// RequestCommand is a shell line that sends the service one completion through its router:
	// through `kubectl port-forward` to a standalone router's Service, or to the address its
	// Gateway reports; empty without a router.
	RequestCommand pulumi.StringOutput `pulumi:"requestCommand"`
	// RouterReady is true when an Endpoint Picker of the current configuration is ready to pick
	// endpoints; false without a router.
	RouterReady pulumi.BoolOutput `pulumi:"routerReady"`

	// Children are the child resources by suffix ("podgroup", "{role}-{i}"), for Go programs
	// that depend on one of them. For a replica rolled in batches it is the LWS's rollout patch,
	// which holds the replica's latest state.
	Children map[string]*apiextensions.CustomResource
}

// NewInferenceService registers an InferenceService and its whole tree. Every rule is checked
// before anything is registered: the shape at once, and the pod templates as soon as they are
// known (at preview a template that depends on unknown outputs is checked at update).
func NewInferenceService(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*InferenceService, error) {
	if args == nil {
		return nil, fmt.Errorf("InferenceService %q: args are required", name)
	}
	svc, templates := args.Service(name)
	return NewFromService(ctx, name, svc, templates, opts...)
}

// NewFromService registers the InferenceService a decoded manifest or spec describes, as
// NewInferenceService does. A role's pod template is the Input in templates (by role index) where
// there is one, else the spec's own. The root program calls it with a manifest's services, the
// provider with the spec it decoded from a TypeScript, Python or YAML program's inputs.
func NewFromService(ctx *pulumi.Context, name string, svc *api.InferenceService, templates map[int]k8scorev1.PodTemplateSpecInput, opts ...pulumi.ResourceOption) (*InferenceService, error) {
	shape := &api.InferenceService{TypeMeta: svc.TypeMeta, ObjectMeta: svc.ObjectMeta, Spec: svc.Spec}
	shape.Spec.Roles = append([]api.Role(nil), svc.Spec.Roles...)
	for i := range templates {
		if i < 0 || i >= len(shape.Spec.Roles) {
			return nil, fmt.Errorf("InferenceService %q: a template for role %d of %d", shape.Name, i, len(shape.Spec.Roles))
		}
		shape.Spec.Roles[i].Template = nil
	}
	resolved, errs := api.ResolveShape(shape)
	if len(errs) > 0 {
		return nil, &api.ValidationError{Service: shape.Name, Errors: errs}
	}
	refs, err := render.Plan(shape, resolved)
	if err != nil {
		return nil, err
	}
	tree := buildTree(ctx, shape, templates)
	// Resolving the tree validates the templates; at preview it may stay unknown, and the
	// children's contents with it.
	built, _, err := awaitOutput(ctx, tree)
	if err != nil {
		return nil, err
	}

	component := &InferenceService{Children: map[string]*apiextensions.CustomResource{}}
	if err := ctx.RegisterComponentResource(TypeToken, name, component, opts...); err != nil {
		return nil, err
	}
	if t, known := built.(*render.Tree); known {
		for _, w := range t.Warnings() {
			if err := ctx.Log.Warn(w, &pulumi.LogArgs{Resource: component}); err != nil {
				return nil, err
			}
		}
	}
	if ctx.DryRun() {
		// Known from the shape alone, so a preview says how the change it shows will roll.
		if err := ctx.Log.Info("rollout: "+render.DescribeRollout(render.RolloutBatches(refs))+
			". A renamed role is not rolled: its replicas' LWSs are replaced (deleted, then created).", &pulumi.LogArgs{Resource: component}); err != nil {
			return nil, err
		}
		creation, largestBatch := render.AwaitedAtOnce(refs)
		for _, message := range []string{
			parallelismHoldsReplicasBack(creation, largestBatch, ctx.Parallel()),
			clientRateHoldsPreviewBack(len(refs), config.Get(ctx, "kubernetes:kubeClientSettings"), os.Getenv("PULUMI_K8S_CLIENT_QPS")),
			checkpointsHoldUpBack(resourcesInTheStack(refs), env.SkipCheckpoints.Value()),
		} {
			if message == "" {
				continue
			}
			if err := ctx.Log.Info(message, &pulumi.LogArgs{Resource: component}); err != nil {
				return nil, err
			}
		}
	}
	failures, err := newWaitFailures(ctx, name, component, shape, refs)
	if err != nil {
		return nil, err
	}
	barriers := newRolloutBarriers(ctx, name, component, refs)
	for i, ref := range refs {
		child, err := registerChild(ctx, name, component, tree, i, ref, failures, barriers)
		if err != nil {
			return nil, barriers.registerCreated(err)
		}
		component.Children[ref.Suffix] = child
	}
	if err := barriers.registerCreated(nil); err != nil {
		return nil, err
	}
	setOutputs(ctx, component, shape, refs)
	setRouterOutputs(ctx, component, shape, refs)
	component.RequestCommand = tree.ApplyT(func(t any) string {
		if router := render.Summarize(t.(*render.Tree)).Router; router != nil {
			return router.Request
		}
		return ""
	}).(pulumi.StringOutput)
	setGPUOutputs(component, tree)
	return component, ctx.RegisterResourceOutputs(component, pulumi.Map{
		"serviceName":               component.ServiceName,
		"namespace":                 component.Namespace,
		"gangScheduled":             component.GangScheduled,
		"podGroupName":              component.PodGroupName,
		"nodePoolNames":             component.NodePoolNames,
		"leaderWorkerSetNames":      component.LeaderWorkerSetNames,
		"status":                    component.Status,
		"gpusAtFullSize":            component.GPUsAtFullSize,
		"gpusMinimal":               component.GPUsMinimal,
		"poolName":                  component.PoolName,
		"endpointPickerServiceName": component.EndpointPickerServiceName,
		"httpRouteName":             component.HTTPRouteName,
		"routerReady":               component.RouterReady,
		"requestCommand":            component.RequestCommand,
	})
}

// buildTree is the core's tree as an Output: it resolves when every pod template does, and
// fails with every violation when the completed spec does not validate.
func buildTree(ctx *pulumi.Context, shape *api.InferenceService, inputs map[int]k8scorev1.PodTemplateSpecInput) pulumi.AnyOutput {
	templateRoles := slices.Sorted(maps.Keys(inputs))
	templates := make([]any, len(templateRoles))
	for j, i := range templateRoles {
		templates[j] = inputs[i].ToPodTemplateSpecOutputWithContext(ctx.Context())
	}
	return pulumi.All(templates...).ApplyT(func(values []any) (any, error) {
		svc := *shape
		svc.Spec.Roles = append([]api.Role{}, shape.Spec.Roles...)
		for j, v := range values {
			tpl, err := templateToAPI(v.(k8scorev1.PodTemplateSpec), field.NewPath("spec", "roles").Index(templateRoles[j]).Child("template"))
			if err != nil {
				return nil, fmt.Errorf("InferenceService %q: %w", shape.Name, err)
			}
			svc.Spec.Roles[templateRoles[j]].Template = tpl
		}
		t, errs := render.Build(&svc)
		if len(errs) > 0 {
			return nil, &api.ValidationError{Service: svc.Name, Errors: errs}
		}
		return t, nil
	}).(pulumi.AnyOutput)
}

// registerChild registers the i-th object of the tree as a pulumi-kubernetes resource, named
// "{component}-{suffix}", parented to the component. Its name, namespace and kind are known at
// preview; its contents come from the tree. An awaited LWS's failure is reported by failures.
func registerChild(ctx *pulumi.Context, componentName string, component *InferenceService, tree pulumi.AnyOutput, i int, ref render.Ref,
	failures *waitFailures, barriers *rolloutBarriers) (*apiextensions.CustomResource, error) {
	object := tree.ApplyT(func(t any) (map[string]any, error) {
		return t.(*render.Tree).Objects[i].Unstructured()
	}).(pulumi.MapOutput)
	metadataField := func(field string) pulumi.StringMapOutput {
		return object.ApplyT(func(m map[string]any) map[string]string {
			values, _ := m["metadata"].(map[string]any)[field].(map[string]any)
			if values == nil {
				return nil // absent stays absent, not "{}"
			}
			out := make(map[string]string, len(values))
			for k, v := range values {
				out[k] = v.(string)
			}
			return out
		}).(pulumi.StringMapOutput)
	}
	resolve := func(suffixes []string) ([]pulumi.Resource, error) {
		var out []pulumi.Resource
		for _, suffix := range suffixes {
			dependency, ok := component.Children[suffix]
			if !ok {
				return nil, fmt.Errorf("internal error: %s depends on %q, which is not registered before it", ref.Suffix, suffix)
			}
			out = append(out, dependency)
		}
		return out, nil
	}
	dependsOn, err := resolve(ref.DependsOn)
	if err != nil {
		return nil, err
	}
	inputs := kubernetes.UntypedArgs{
		"apiVersion": pulumi.String(ref.APIVersion),
		"kind":       pulumi.String(ref.Kind),
		"metadata": &k8smetav1.ObjectMetaArgs{
			Name:        pulumi.String(ref.Name),
			Namespace:   namespaceOf(ref),
			Labels:      metadataField("labels"),
			Annotations: metadataField("annotations"),
		},
	}
	for _, f := range render.BodyFields(ref.TypeMeta) {
		inputs[f] = object.ApplyT(func(m map[string]any) any { return m[f] })
	}
	opts := append([]pulumi.ResourceOption{pulumi.Parent(component), pulumi.DependsOn(dependsOn)}, failures.option(ref)...)
	if !ref.RolledInBatches() {
		if ignored := ref.IgnoredFields(); len(ignored) > 0 {
			opts = append(opts, pulumi.IgnoreChanges(ignored))
		}
		if ref.ReplacedWhole() { // same name, so the old one goes first
			opts = append(opts, pulumi.ReplaceOnChanges([]string{"spec"}), pulumi.DeleteBeforeReplace(true))
		}
		var child apiextensions.CustomResource
		if err := ctx.RegisterResource(kubetoken.Of(ref.APIVersion, ref.Kind), componentName+"-"+ref.Suffix, inputs, &child, opts...); err != nil {
			return nil, err
		}
		failures.watch(ref, &child, dependsOn)
		return &child, nil
	}
	return registerRolledLeaderWorkerSet(ctx, componentName, component, ref, inputs, dependsOn, resolve, failures, barriers)
}

// registerRolledLeaderWorkerSet registers an LWS that a rollout updates in batches as two
// resources (docs/design/0013-create-in-parallel-roll-in-batches.md): the LWS itself, which
// creates the replica with no other replica to wait for and without waiting for it (so a first
// deployment loads every model at once, whatever the engine's parallelism: 0040) and ignores
// every later change; and its rollout, a Patch resource of the same object that applies each
// change after the batch before is done (ref.RolloutAfter, through the batch's barrier; the
// first batch after barrier 0, every replica created: rolloutBarriers) and waits for the
// replica to be Available again. The rollout is the replica's latest state: the status and
// every dependency read it. Deleting it leaves the LWS as it is (retainOnDelete): the LWS's own
// deletion removes the replica.
//
// Both carry the same inputs, patchForce included, and the LWS's skipAwait besides, so the
// rollout's first apply changes nothing on the object: the state the provider returns for it is
// the same whether its wait saw the object before or after that apply
// (docs/design/0018-a-rollout-that-changes-nothing.md).
func registerRolledLeaderWorkerSet(ctx *pulumi.Context, componentName string, component *InferenceService, ref render.Ref,
	inputs kubernetes.UntypedArgs, dependsOn []pulumi.Resource, resolve func([]string) ([]pulumi.Resource, error), failures *waitFailures,
	barriers *rolloutBarriers) (*apiextensions.CustomResource, error) {
	forced := withAnnotations(inputs, map[string]string{annotationPatchForce: "true"}) // the rollout takes the fields the LWS resource created
	created := withAnnotations(forced, lwsResourceAnnotations)
	var lws apiextensions.CustomResource
	if err := ctx.RegisterResource(kubetoken.Of(ref.APIVersion, ref.Kind), componentName+"-"+ref.Suffix, created, &lws,
		append([]pulumi.ResourceOption{pulumi.Parent(component), pulumi.DependsOn(dependsOn), pulumi.IgnoreChanges(createOnlyFields)}, failures.option(ref)...)...); err != nil {
		return nil, err
	}
	failures.watch(ref, &lws, dependsOn)
	barriers.wasCreated(&lws)
	rolloutDependsOn := []pulumi.Resource{&lws}
	var rolloutDependsOnInputs []pulumi.ResourceArrayOutput
	rolloutOpts := []pulumi.ResourceOption{pulumi.Parent(component), pulumi.RetainOnDelete(true)}
	if ref.RolloutAfter > 0 {
		barrier, err := barriers.after(ref.RolloutAfter, resolve)
		if err != nil {
			return nil, err
		}
		rolloutDependsOn = append(rolloutDependsOn, barrier)
	} else {
		rolloutDependsOnInputs = append(rolloutDependsOnInputs, barriers.createdBarrier)
		rolloutOpts = append(rolloutOpts, pulumi.DependsOnInputs(barriers.createdBarrier))
	}
	rolloutOpts = append(append(rolloutOpts, pulumi.DependsOn(rolloutDependsOn)), failures.option(ref)...)
	if ref.Pinned {
		rolloutOpts = append(rolloutOpts, pulumi.IgnoreChanges(render.TemplateFields))
	}
	var rollout apiextensions.CustomResource
	if err := ctx.RegisterResource(kubetoken.PatchOf(ref.APIVersion, ref.Kind), componentName+"-"+ref.Suffix+"-rollout", forced, &rollout, rolloutOpts...); err != nil {
		return nil, err
	}
	failures.watch(ref, &rollout, rolloutDependsOn, rolloutDependsOnInputs...)
	return &rollout, nil
}

// withAnnotations is inputs with the annotations added.
func withAnnotations(inputs kubernetes.UntypedArgs, added map[string]string) kubernetes.UntypedArgs {
	out := kubernetes.UntypedArgs{}
	for k, v := range inputs {
		out[k] = v
	}
	metadata := inputs["metadata"].(*k8smetav1.ObjectMetaArgs)
	out["metadata"] = &k8smetav1.ObjectMetaArgs{
		Name: metadata.Name, Namespace: metadata.Namespace, Labels: metadata.Labels,
		Annotations: metadata.Annotations.ToStringMapOutput().ApplyT(func(annotations map[string]string) map[string]string {
			out := maps.Clone(added)
			for k, v := range annotations {
				out[k] = v
			}
			return out
		}).(pulumi.StringMapOutput),
	}
	return out
}

// lwsResourceAnnotations are on the LWS resource of a rolled replica, not on its rollout; the
// provider reads both from a resource's inputs (pulumi-kubernetes provider/pkg/metadata
// overrides.go). The rollout's inputs lack only these keys, so its state, the object pruned to
// its inputs' keys, is its inputs whichever version of the object its wait returns
// (docs/design/0018-a-rollout-that-changes-nothing.md).
//
// skipAwait: its creation returns once the object is written and the rollout alone waits for the
// replica (ReadyCondition reads the wait itself from the object:
// docs/design/0040-every-replica-loads-before-any-wait.md). deletionPropagationPolicy
// background: its deletion (a destroy, a replica scaled away) returns once the LWS is gone and
// the garbage collector removes its StatefulSets and pods after, as `kubectl delete` leaves them;
// the provider's default, foreground (DeletionPropagation), waits for every pod to terminate,
// the engine's workers at a time (docs/design/0041-a-destroy-that-does-not-wait-for-pods.md).
var lwsResourceAnnotations = map[string]string{annotationSkipAwait: "true", annotationDeletionPropagation: "background"}

const (
	annotationSkipAwait           = "pulumi.com/skipAwait"
	annotationDeletionPropagation = "pulumi.com/deletionPropagationPolicy"
)

// The rollout of an LWS is applied with force: its first apply shares the fields the LWS
// resource created (same values), each later one changes them, and only a forced apply may
// change a field another field manager set (pulumi-kubernetes provider/pkg/await/await.go,
// patchForce).
const annotationPatchForce = "pulumi.com/patchForce"

// createOnlyFields are what the LWS resource of a rolled replica ignores after creating it:
// everything its rollout applies.
var createOnlyFields = []string{"metadata.labels", "metadata.annotations", "spec"}

// setOutputs derives the component's outputs: names from the plan (known at preview), status
// from the LWSs' outputs, settled when one of them fails (settle).
func setOutputs(ctx *pulumi.Context, component *InferenceService, shape *api.InferenceService, refs []render.Ref) {
	svc := render.WithDefaults(shape)
	component.ServiceName = pulumi.String(svc.Name).ToStringOutput()
	component.Namespace = pulumi.String(svc.Namespace).ToStringOutput()
	component.GangScheduled = pulumi.Bool(svc.Spec.GangScheduled()).ToBoolOutput()
	podGroupName := ""
	nodePoolNames := pulumi.StringArray{}
	lwsNames := pulumi.StringArrayMap{}
	var lwsOutputs []pulumi.Output
	var lwsRoles []string // the role of each of lwsOutputs
	var roleOrder []string
	for _, ref := range refs {
		switch ref.TypeMeta {
		case render.KindPodGroup:
			podGroupName = ref.Name
		case render.KindNodePool:
			nodePoolNames = append(nodePoolNames, pulumi.String(ref.Name))
		case render.KindLeaderWorkerSet:
			if _, seen := lwsNames[ref.Role]; !seen {
				roleOrder = append(roleOrder, ref.Role)
				lwsNames[ref.Role] = pulumi.StringArray{}
			}
			lwsNames[ref.Role] = append(lwsNames[ref.Role].(pulumi.StringArray), pulumi.String(ref.Name))
			lwsOutputs = append(lwsOutputs, component.Children[ref.Suffix].OtherFields)
			lwsRoles = append(lwsRoles, ref.Role)
		}
	}
	component.PodGroupName = pulumi.String(podGroupName).ToStringOutput()
	component.NodePoolNames = nodePoolNames.ToStringArrayOutput()
	component.LeaderWorkerSetNames = lwsNames.ToStringArrayMapOutput()

	nodesPerReplica := map[string]int{}
	for i := range svc.Spec.Roles {
		nodesPerReplica[svc.Spec.Roles[i].Name] = int(svc.Spec.Roles[i].NodeCount())
	}
	component.Status = settle(ctx, lwsOutputs).ApplyT(func(v any) map[string]RoleStatus {
		lws := v.(settled)
		observations := map[string][]rolestatus.Replica{}
		for i, role := range lwsRoles {
			obs := rolestatus.Replica{Replicas: 1}
			if fields, ok := lws.values[i].(map[string]any); ok {
				obs = observeLeaderWorkerSet(fields)
			}
			obs.Failed = lws.failed[i]
			observations[role] = append(observations[role], obs)
		}
		out := make(map[string]RoleStatus, len(roleOrder))
		for _, role := range roleOrder {
			out[role] = roleStatus(nodesPerReplica[role], observations[role])
		}
		return out
	}).(RoleStatusMapOutput)
}

// setGPUOutputs are the core's summary of the built tree: known once the templates are.
func setGPUOutputs(component *InferenceService, tree pulumi.AnyOutput) {
	summary := tree.ApplyT(func(t any) render.Summary { return render.Summarize(t.(*render.Tree)) })
	component.GPUsAtFullSize = summary.ApplyT(func(s any) int { return int(s.(render.Summary).GPUs) }).(pulumi.IntOutput)
	component.GPUsMinimal = summary.ApplyT(func(s any) int { return int(s.(render.Summary).MinimalGPUs) }).(pulumi.IntOutput)
}

// namespaceOf is the object's namespace, none for a cluster-scoped object (a NodePool).
func namespaceOf(ref render.Ref) pulumi.StringPtrInput {
	if ref.Namespace == "" {
		return nil
	}
	return pulumi.String(ref.Namespace)
}

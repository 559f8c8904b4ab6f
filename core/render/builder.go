// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// Kinds of the objects in a tree.
var (
	KindPodGroup        = TypeMeta{APIVersion: volcanov1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"}
	KindLeaderWorkerSet = TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"}
	KindNodePool        = TypeMeta{APIVersion: karpenter.KarpenterGroupVersion.String(), Kind: "NodePool"}
)

// TypeMeta is an object's apiVersion and kind.
type TypeMeta struct{ APIVersion, Kind string }

// Ref describes one object of a service's tree from the spec's shape alone (roles, names,
// component types, replicas, nodeCount, scheduling settings), so a caller can lay out the tree
// before pod templates are known, as Pulumi must at preview.
type Ref struct {
	TypeMeta
	Name      string
	Namespace string
	// Suffix names the object relative to the service; Pulumi names the child "{component}-{suffix}".
	Suffix string
	// Role and Replica locate a LeaderWorkerSet in the spec; Role is empty for service-wide objects.
	Role    string
	Replica int32
	// NodePool names the spec.nodePools entry of a NodePool.
	NodePool string
	// Awaited is true when a deployment waits for the object to be Available.
	Awaited bool
	// DependsOn lists the suffixes of the objects that must exist before this one.
	DependsOn []string
	// RolloutAfter is the batch (its Batch number) whose update must be done (every object of
	// it Available again) before this one is updated: the batch before in a rollout, 0 for
	// none. Unlike DependsOn it does not order creation: a first deployment creates every
	// replica at once, so that their models load in parallel
	// (docs/design/0013-create-in-parallel-roll-in-batches.md). A deployment waits for the
	// batch through its barrier (RolloutBarriers), so each object names one dependency, not
	// the whole batch before (docs/design/0038-state-linear-in-the-replicas.md).
	RolloutAfter int
	// Pinned is true for an LWS whose pod template a deployment leaves as it is (its replica is
	// below the role's rolloutStrategy.partition): Pulumi ignores changes to TemplateFields.
	Pinned bool
	// Batch is the place in the rollout chain (from 1) of an LWS or of the router's Endpoint
	// Picker Deployment when rollouts are batched; 0 otherwise.
	Batch int
	// Elastic is true for the LWS of an autoscaled role's elastic replicas: the autoscaler owns
	// its ElasticFields.
	Elastic bool
}

// IgnoredFields are the paths of the object a deployment leaves as they are once it exists: the
// templates of a pinned replica, the replica count of an elastic LWS.
func (r Ref) IgnoredFields() []string {
	switch {
	case r.Pinned:
		return TemplateFields
	case r.Elastic:
		return ElasticFields
	}
	return nil
}

// ReplacedWhole reports whether a changed object is deleted and created anew instead of updated:
// a model's download Job, whose pod template Kubernetes does not let change. A new revision is a
// new download.
func (r Ref) ReplacedWhole() bool { return r.TypeMeta == KindJob }

// RolledInBatches reports whether the object is a replica's LWS that a rollout updates in its
// batch, apart from its creation (RolloutAfter): the batches' base replicas. The router's
// Deployment and an elastic LWS also have a place in the chain, but through DependsOn.
func (r Ref) RolledInBatches() bool {
	return r.TypeMeta == KindLeaderWorkerSet && r.Batch > 0 && !r.Elastic
}

// TemplateFields are the paths of an LWS that a changed pod template changes: its templates and
// the revision label that names them.
var TemplateFields = []string{
	"spec.leaderWorkerTemplate.leaderTemplate",
	"spec.leaderWorkerTemplate.workerTemplate",
	`metadata.labels["` + LabelRevision + `"]`,
}

// Object is one built object with its place in the tree.
type Object struct {
	Ref
	// Object is the typed upstream API object.
	Object runtime.Object
}

// Tree is every object of one service, in apply order.
type Tree struct {
	Service *api.InferenceService
	Objects []Object
	// routing is what the router's objects were built from; nil without a router.
	routing *routing
	// resolved is what validation parsed of the service.
	resolved *api.Resolved
}

// WithDefaults returns the service with its namespace defaulted; the caller's value is not changed.
func WithDefaults(svc *api.InferenceService) *api.InferenceService {
	out := *svc
	if out.Namespace == "" {
		out.Namespace = api.DefaultNamespace
	}
	return &out
}

// Plan lays out the tree of a service from what its shape resolved to (api.ResolveShape, or
// api.Resolve), in apply order:
// node pools, FMA's controller, the models' claims and download Jobs, the PodGroup when gang scheduling is on, one LeaderWorkerSet per
// replica (and an autoscaled role's elastic one with its ScaledObject), the router's objects and
// its HTTPRoute, then the PodMonitors and dashboard spec.monitoring asks for. In await mode all
// (the default) the LeaderWorkerSets and the router follow each other in rollout batches
// (rolloutPlan). In await mode minimal the gang's minimal set comes first and every other replica
// depends on it, or Volcano may start an extra replica while the deployment waits for a minimal
// one. Every DependsOn names an earlier object.
func Plan(svc *api.InferenceService, resolved *api.Resolved) ([]Ref, error) {
	svc = WithDefaults(svc)
	spec := &svc.Spec
	var refs []Ref
	// Node pools first: the pods that need them depend on them, so they go last on destroy.
	for _, pool := range karpenterPools(spec) {
		refs = append(refs, Ref{TypeMeta: KindNodePool, Name: api.KarpenterNodePoolName(svc.Name, pool.Name),
			Suffix: nodePoolSuffix(pool.Name), NodePool: pool.Name})
	}
	// FMA's controller next: the requesters of dual-pods roles depend on it, so destroy removes them first.
	controller, err := dualPodsControllerRefs(svc)
	if err != nil {
		return nil, err
	}
	refs = append(refs, controller...)
	// The models' claims and downloads next: the servers are created after their model is in place.
	models, serversAfter := modelRefs(svc, resolved.Models)
	refs = append(refs, models...)
	// The picker's tokenizer (strategy precise-prefix-cache), once its model's files are in place.
	if router := spec.Router(); router != nil && router.RunsTokenizer() {
		owner, role := tokenizerOwner(spec)
		var after []string
		if spec.ModelOf(role) != nil {
			after = serversAfter[owner]
		}
		refs = append(refs, tokenizerRefs(svc, after)...)
	}
	// The decode leaders' sidecar reads the pool with the permissions it is given first.
	sidecar := disaggSidecarRefs(svc)
	refs = append(refs, sidecar...)
	var lwsDependsOn []string
	if spec.GangScheduled() {
		refs = append(refs, Ref{TypeMeta: KindPodGroup, Name: api.PodGroupName(svc.Name), Namespace: svc.Namespace, Suffix: podGroupSuffix})
		lwsDependsOn = append(lwsDependsOn, podGroupSuffix)
	}
	replicas := map[string][]Ref{} // per serving role, its replicas' LWSs in index order
	elastic := map[string][]Ref{}  // per autoscaled role, its elastic LWS and ScaledObject
	var roleOrder []string
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		roleDependsOn := lwsDependsOn
		if pool := spec.NodePoolNamed(role.NodePool); pool != nil && pool.PoolKind() == api.NodePoolKarpenter {
			roleDependsOn = append(append([]string{}, roleDependsOn...), nodePoolSuffix(pool.Name))
		}
		if role.DualPods() && len(controller) > 0 {
			roleDependsOn = append(append([]string{}, roleDependsOn...), suffixFMAController)
		}
		if spec.ModelOf(role) != nil {
			roleDependsOn = append(append([]string{}, roleDependsOn...), serversAfter[api.ModelOwner(role)]...)
		}
		if len(sidecar) > 0 && role.ComponentType == api.ComponentTypeDecoder {
			roleDependsOn = append(append([]string{}, roleDependsOn...), suffixSidecarRoleBinding)
		}
		roleOrder = append(roleOrder, role.Name)
		if role.Autoscaled() {
			elastic[role.Name] = elasticRefs(svc, role, roleDependsOn)
		}
		for r := int32(0); r < role.ReplicaCount(); r++ {
			replicas[role.Name] = append(replicas[role.Name], Ref{
				TypeMeta:  KindLeaderWorkerSet,
				Name:      api.LeaderWorkerSetName(svc.Name, role.Name, r),
				Namespace: svc.Namespace,
				Suffix:    leaderWorkerSetSuffix(role.Name, r),
				Role:      role.Name,
				Replica:   r,
				DependsOn: roleDependsOn,
				Pinned:    role.Pinned(r),
			})
		}
	}
	switch spec.AwaitMode() {
	case api.AwaitAll:
		refs = append(refs, rolloutPlan(svc, replicas, elastic)...)
	case api.AwaitMinimal:
		refs = append(refs, minimalFirstPlan(svc, roleOrder, replicas, elastic)...)
	default: // none: nothing is awaited, so no order holds anything back
		for _, name := range roleOrder {
			refs = append(append(refs, replicas[name]...), elastic[name]...)
		}
		refs = append(append(refs, routerRefs(svc, nil)...), entranceRefs(svc, nil)...)
	}
	return append(refs, monitoringRefs(svc)...), nil
}

// minimalFirstPlan awaits the gang's minimal set, created first, and makes every other replica
// depend on it without awaiting them.
func minimalFirstPlan(svc *api.InferenceService, roleOrder []string, replicas, elastic map[string][]Ref) []Ref {
	var minimal, extra []Ref
	var minimalSuffixes []string
	for _, name := range roleOrder {
		role := svc.Spec.RoleNamed(name)
		for _, ref := range replicas[name] {
			if ref.Replica < svc.Spec.GangMinimum(role) {
				ref.Awaited = true
				minimal = append(minimal, ref)
				minimalSuffixes = append(minimalSuffixes, ref.Suffix)
			} else {
				extra = append(extra, ref)
			}
		}
	}
	for _, name := range roleOrder {
		if len(elastic[name]) > 0 {
			extra = append(extra, elastic[name][0]) // the ScaledObject depends on its LWS
		}
	}
	dependOnBatch(extra, minimalSuffixes)
	for _, name := range roleOrder {
		if len(elastic[name]) > 0 {
			extra = append(extra, elastic[name][1])
		}
	}
	out := append(append(minimal, extra...), routerRefs(svc, nil)...)
	return append(out, entranceRefs(svc, minimalSuffixes)...)
}

// Build validates the service and builds its whole tree. On invalid input it returns every
// violation and no objects; an object that cannot be built (a fault of this program, never of
// the input) is an internal error.
func Build(svc *api.InferenceService) (*Tree, field.ErrorList) {
	resolved, errs := api.Resolve(svc)
	if len(errs) > 0 {
		return nil, errs
	}
	tree, err := build(WithDefaults(svc), resolved)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	if errs := checkPoolReach(tree); len(errs) > 0 {
		return nil, errs
	}
	if errs := checkObjectSizes(tree); len(errs) > 0 {
		return nil, errs
	}
	return tree, nil
}

func build(svc *api.InferenceService, resolved *api.Resolved) (*Tree, error) {
	routing, err := newRouting(svc, resolved)
	if err != nil {
		return nil, err
	}
	templates := map[string]roleTemplates{}
	roles := map[string]*api.Role{}
	for i := range svc.Spec.Roles {
		role := &svc.Spec.Roles[i]
		roles[role.Name] = role
		if role.ComponentType.Serving() {
			t, err := buildRoleTemplates(svc.Name, &svc.Spec, role, resolved, routing)
			if err != nil {
				return nil, fmt.Errorf("role %s: %w", role.Name, err)
			}
			templates[role.Name] = t
		}
	}
	refs, err := Plan(svc, resolved)
	if err != nil {
		return nil, err
	}
	tree := &Tree{Service: svc, routing: routing, resolved: resolved}
	for _, ref := range refs {
		var obj runtime.Object
		var err error
		switch ref.TypeMeta {
		case KindPodGroup:
			obj = buildPodGroup(svc)
		case KindLeaderWorkerSet:
			if ref.Elastic {
				obj = buildElasticLeaderWorkerSet(svc, roles[ref.Role], templates[ref.Role], ref.Awaited)
			} else {
				obj = buildLeaderWorkerSet(svc, roles[ref.Role], ref.Replica, templates[ref.Role], ref.Awaited)
			}
		case KindScaledObject:
			obj = buildScaledObject(svc, roles[ref.Role])
		case KindPodMonitor:
			obj = buildPodMonitor(svc, roles[ref.Role], routing, resolved.ServingPorts[ref.Role])
		case KindNodePool:
			obj = buildNodePool(svc, svc.Spec.NodePoolNamed(ref.NodePool))
		case KindJob, KindPersistentVolumeClaim:
			obj = buildModelObject(svc, ref, resolved.Models[ref.Role])
		default:
			switch {
			case ref.Suffix == suffixDashboard:
				obj, err = buildDashboard(svc)
			case ref.TypeMeta == KindConfigMap && ref.Name == api.AdaptersConfigMapName(svc.Name, ref.Role):
				obj, err = buildAdapterList(svc, ref, resolved.Models[ref.Role])
			case ref.Role == "":
				obj, err = dualPodsControllerObject(svc, ref)
			default:
				obj, err = routing.object(ref)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", ref.Kind, ref.Name, err)
		}
		tree.Objects = append(tree.Objects, Object{Ref: ref, Object: obj})
	}
	return tree, nil
}

// Warnings are what the service renders but should be told, each with the field it is in: the
// input model's own (api.Warnings), what its Endpoint Picker would log as deprecated in its configuration (it still loads, but a later
// release will refuse it), and prefill/decode roles with no router in front of them: the router
// is what has a prefill pod prefill each request (the Endpoint Picker's prefill/decode profiles
// and the decode leaders' disaggregation sidecar, pdrouting.go); without it nothing does.
func (t *Tree) Warnings() []string {
	out := api.Warnings(t.Service)
	if t.routing == nil {
		if t.Service.Spec.Disaggregated() {
			out = append(out, "spec.roles: prefill/decode roles without a router: nothing sends a request's prefill to the prefill role "+
				"(no InferencePool, Endpoint Picker or disaggregation sidecar is rendered); add a role of componentType router, "+
				"or send requests through a proxy of your own that has the prefill role prefill before the decode role decodes")
		}
		return out
	}
	index := slices.IndexFunc(t.Service.Spec.Roles, func(r api.Role) bool { return r.ComponentType == api.ComponentTypeRouter })
	for _, w := range t.routing.Selection.Warnings {
		out = append(out, fmt.Sprintf("spec.roles[%d].endpointPickerConfig: %s", index, w))
	}
	return out
}

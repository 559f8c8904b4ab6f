package topology

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// Kinds of the objects in a tree.
var (
	KindPodGroup        = TypeMeta{APIVersion: volcanov1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"}
	KindLeaderWorkerSet = TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"}
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
	// Awaited is true when a deployment waits for the object to be Available.
	Awaited bool
	// DependsOn lists the suffixes of the objects that must exist before this one.
	DependsOn []string
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
}

// WithDefaults returns the service with its namespace defaulted; the caller's value is not changed.
func WithDefaults(svc *api.InferenceService) *api.InferenceService {
	out := *svc
	if out.Namespace == "" {
		out.Namespace = api.DefaultNamespace
	}
	return &out
}

// Plan lays out the tree of a service whose shape validates (api.ValidateShape): the PodGroup
// first when gang scheduling is on, then one LeaderWorkerSet per replica, role by role.
func Plan(svc *api.InferenceService) []Ref {
	svc = WithDefaults(svc)
	spec := &svc.Spec
	var refs []Ref
	var lwsDependsOn []string
	if spec.GangScheduled() {
		refs = append(refs, Ref{TypeMeta: KindPodGroup, Name: PodGroupName(svc.Name), Namespace: svc.Namespace, Suffix: podGroupSuffix})
		lwsDependsOn = append(lwsDependsOn, podGroupSuffix)
	}
	// In await mode minimal, the replicas beyond the gang minimum are created after the minimal
	// ones, or Volcano may start an extra replica while the deployment waits for a minimal one.
	var minimalSet []string
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if role.ComponentType.Serving() {
			for r := int32(0); r < spec.MinRoleReplicas(role.Name) && r < role.ReplicaCount(); r++ {
				minimalSet = append(minimalSet, leaderWorkerSetSuffix(role.Name, r))
			}
		}
	}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		for r := int32(0); r < role.ReplicaCount(); r++ {
			minimal := r < spec.MinRoleReplicas(role.Name)
			ref := Ref{
				TypeMeta:  KindLeaderWorkerSet,
				Name:      api.LeaderWorkerSetName(svc.Name, role.Name, r),
				Namespace: svc.Namespace,
				Suffix:    leaderWorkerSetSuffix(role.Name, r),
				Role:      role.Name,
				Replica:   r,
				Awaited:   spec.AwaitMode() == api.AwaitAll || (spec.AwaitMode() == api.AwaitMinimal && minimal),
				DependsOn: lwsDependsOn,
			}
			if spec.AwaitMode() == api.AwaitMinimal && !minimal {
				ref.DependsOn = append(append([]string{}, lwsDependsOn...), minimalSet...)
			}
			refs = append(refs, ref)
		}
	}
	return refs
}

// Build validates the service and builds its whole tree. On invalid input it returns every
// violation and no objects.
func Build(svc *api.InferenceService) (*Tree, field.ErrorList) {
	if errs := api.Validate(svc); len(errs) > 0 {
		return nil, errs
	}
	svc = WithDefaults(svc)
	templates := map[string]roleTemplates{}
	for i := range svc.Spec.Roles {
		role := &svc.Spec.Roles[i]
		if role.ComponentType.Serving() {
			templates[role.Name] = buildRoleTemplates(&svc.Spec, role)
		}
	}
	roles := map[string]*api.Role{}
	for i := range svc.Spec.Roles {
		roles[svc.Spec.Roles[i].Name] = &svc.Spec.Roles[i]
	}
	tree := &Tree{Service: svc}
	for _, ref := range Plan(svc) {
		var obj runtime.Object
		switch ref.TypeMeta {
		case KindPodGroup:
			obj = buildPodGroup(svc)
		case KindLeaderWorkerSet:
			obj = buildLeaderWorkerSet(svc, roles[ref.Role], ref.Replica, templates[ref.Role], ref.Awaited)
		}
		tree.Objects = append(tree.Objects, Object{Ref: ref, Object: obj})
	}
	return tree, nil
}

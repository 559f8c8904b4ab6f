package api

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultMaxUnavailable is a role's maxUnavailable when unset: a quarter of its replicas, as a
// Kubernetes Deployment's.
var DefaultMaxUnavailable = intstr.FromString("25%")

// defaultRolloutOrder is the order of component types a rollout follows for the roles
// spec.rolloutOrder leaves out: decoders first, so prefill keeps every replica until decode is
// done; the router last, once the servers it routes to run the new revision.
var defaultRolloutOrder = []ComponentType{ComponentTypeDecoder, ComponentTypePrefiller, ComponentTypeWorker, ComponentTypeRouter}

var percentPattern = regexp.MustCompile(`^[0-9]+%$`)

// MaxSurge is the role's per-replica surge, 0 when unset.
func (r *Role) MaxSurge() int32 {
	if r.RolloutStrategy == nil || r.RolloutStrategy.MaxSurge == nil {
		return 0
	}
	return int32(*r.RolloutStrategy.MaxSurge)
}

// Pinned reports whether a replica keeps its current pod template (its index is below the
// role's rolloutStrategy.partition).
func (r *Role) Pinned(replica int32) bool {
	return r.RolloutStrategy != nil && r.RolloutStrategy.Partition != nil && int(replica) < *r.RolloutStrategy.Partition
}

// MaxUnavailableOrDefault is the role's maxUnavailable, 25% when unset.
func (r *Role) MaxUnavailableOrDefault() intstr.IntOrString {
	if r.RolloutStrategy == nil || r.RolloutStrategy.MaxUnavailable == nil {
		return DefaultMaxUnavailable
	}
	return *r.RolloutStrategy.MaxUnavailable
}

// RolloutBatchSize is how many of the role's replicas a rollout updates at once: maxUnavailable
// resolved against the replicas (a percent rounded down), at least 1 (with maxUnavailable 0 and
// maxSurge 1 each replica of the batch surges, so none is unavailable) and at most the replicas.
func (r *Role) RolloutBatchSize() int32 {
	n, err := resolveMaxUnavailable(r.MaxUnavailableOrDefault(), r.ReplicaCount())
	if err != nil {
		panic("rolloutStrategy of a validated role: " + err.Error())
	}
	return min(max(n, 1), r.ReplicaCount())
}

// resolveMaxUnavailable is a count as it is, or a percent of replicas rounded down.
func resolveMaxUnavailable(v intstr.IntOrString, replicas int32) (int32, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(replicas), false)
	return int32(n), err
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

// RolloutRoles are the serving roles and the router in the order a rollout updates them: those
// spec.rolloutOrder names, in its order, then the others by component type (decoders,
// prefillers, workers, router), each type in spec order.
func (s *InferenceServiceSpec) RolloutRoles() []*Role {
	var ordered []*Role
	seen := sets.New[string]()
	add := func(role *Role) {
		if !seen.Has(role.Name) {
			seen.Insert(role.Name)
			ordered = append(ordered, role)
		}
	}
	for _, name := range s.RolloutOrder {
		if role := s.RoleNamed(name); role != nil {
			add(role)
		}
	}
	for _, componentType := range defaultRolloutOrder {
		for i := range s.Roles {
			if s.Roles[i].ComponentType == componentType {
				add(&s.Roles[i])
			}
		}
	}
	return ordered
}

// validateRolloutStrategy checks a role's maxUnavailable, surge and partition.
func validateRolloutStrategy(spec *InferenceServiceSpec, role *Role, path *field.Path) field.ErrorList {
	rs := role.RolloutStrategy
	if rs == nil {
		return nil
	}
	var errs field.ErrorList
	if rs.MaxSurge != nil && (*rs.MaxSurge < 0 || *rs.MaxSurge > 1) {
		errs = append(errs, field.Invalid(path.Child("maxSurge"), *rs.MaxSurge,
			"must be 0 or 1: a replica is one group, so at most one new group comes up before the old one goes"))
	}
	if rs.Partition != nil && (*rs.Partition < 0 || *rs.Partition > int(role.ReplicaCount())) {
		errs = append(errs, field.Invalid(path.Child("partition"), *rs.Partition,
			fmt.Sprintf("must be >= 0 and <= replicas (%d)", role.ReplicaCount())))
	}
	if rs.MaxUnavailable != nil {
		errs = append(errs, validateMaxUnavailable(spec, role, *rs.MaxUnavailable, path.Child("maxUnavailable"))...)
	}
	return errs
}

// validateMaxUnavailable checks an explicit maxUnavailable: its form, that a rollout can start,
// and that the service's settings let batches of that size exist.
func validateMaxUnavailable(spec *InferenceServiceSpec, role *Role, v intstr.IntOrString, path *field.Path) field.ErrorList {
	shown := v.String()
	switch {
	case v.Type == intstr.Int && v.IntVal < 0:
		return field.ErrorList{field.Invalid(path, shown, "must be >= 0")}
	case v.Type == intstr.String && !percentPattern.MatchString(v.StrVal):
		return field.ErrorList{field.Invalid(path, shown, `must be a count (2) or a percent of the replicas ("25%")`)}
	case v.Type == intstr.String:
		if percent, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1]); percent > 100 {
			return field.ErrorList{field.Invalid(path, shown, "must not be more than 100%")}
		}
	}
	if literalZero := (v.Type == intstr.Int && v.IntVal == 0) || (v.Type == intstr.String && v.StrVal == "0%"); literalZero && role.MaxSurge() == 0 {
		return field.ErrorList{field.Invalid(path, shown, "may not be 0 when maxSurge is 0: no replica could ever be updated")}
	}
	if !spec.RolloutBatched() {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"batches need every replica awaited, and spec.await is %s: a rollout updates every replica at once; set spec.await all (the default)", spec.AwaitMode()))}
	}
	if first := spec.RolloutFirstBatch(role); role.RolloutBatchSize() < first {
		return field.ErrorList{field.Invalid(path, shown, fmt.Sprintf(
			"the gang's minimal set holds %d replicas of this role (%s), which are created and so updated together: "+
				"must be at least %d, or lower the minimum", first, gangMinimumSource(spec), first))}
	}
	return nil
}

// gangMinimumSource names the setting that fixes a role's gang minimum.
func gangMinimumSource(spec *InferenceServiceSpec) string {
	if spec.GangMode() == GangModeTaskMember {
		return "spec.gangPolicy.mode taskMember needs every replica"
	}
	return "spec.gangPolicy.minRoleReplicas"
}

// validateRolloutOrder checks that spec.rolloutOrder names each role at most once, and only roles
// a rollout updates in turn.
func validateRolloutOrder(spec *InferenceServiceSpec, path *field.Path) field.ErrorList {
	if len(spec.RolloutOrder) == 0 {
		return nil
	}
	var errs field.ErrorList
	if !spec.RolloutBatched() {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf(
			"an order needs every replica awaited, and spec.await is %s; set spec.await all (the default)", spec.AwaitMode())))
	}
	var known []string
	for i := range spec.Roles {
		if spec.Roles[i].Name != "" {
			known = append(known, spec.Roles[i].Name)
		}
	}
	roles, seen := sets.New(known...), sets.New[string]()
	for i, name := range spec.RolloutOrder {
		switch {
		case !roles.Has(name):
			errs = append(errs, field.NotSupported(path.Index(i), name, known))
		case seen.Has(name):
			errs = append(errs, field.Duplicate(path.Index(i), name))
		}
		seen.Insert(name)
	}
	return errs
}

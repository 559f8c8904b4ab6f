// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var percentPattern = regexp.MustCompile(`^[0-9]+%$`)

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
		if percent, err := strconv.Atoi(v.StrVal[:len(v.StrVal)-1]); err != nil || percent > 100 {
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

// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// The metrics of vLLM's /metrics endpoint an autoscaled role may name (vLLM's metrics
// reference, docs/autoscaling.md); anything else is a PromQL query.
const (
	MetricRequestsWaiting = vllm.MetricRequestsWaiting
	MetricKVCacheUsage    = vllm.MetricKVCacheUsage
)

// KnownMetrics are the metric names an autoscaled role may give on their own.
var KnownMetrics = []string{MetricRequestsWaiting, MetricKVCacheUsage}

// MaxScaleDownDelay bounds scaleDownDelay: the HPA's stabilization window is at most an hour.
const MaxScaleDownDelay = time.Hour

// metricName is a bare Prometheus metric name: a metric, not a query.
var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// validateAutoscaling checks a serving role's autoscaling (docs/design/0014-autoscaling.md).
func validateAutoscaling(spec *InferenceServiceSpec, role *Role, rolePath *field.Path) field.ErrorList {
	as := role.Autoscaling
	if as == nil {
		return nil
	}
	path := rolePath.Child("autoscaling")
	var errs field.ErrorList
	switch {
	case role.DualPods():
		errs = append(errs, field.Forbidden(path, "a dual-pods role's servers are run by FMA's dual-pods controller, which puts "+
			"them to sleep and wakes them on the GPUs the requesters hold: sleep/wake is its answer to changing load, and an "+
			"autoscaler adding and removing requesters under it would fight it"))
	case spec.GangMode() == GangModeTaskMember:
		errs = append(errs, field.Forbidden(path, "spec.gangPolicy.mode taskMember requires every replica in the gang: a replica "+
			"the autoscaler adds could never be scheduled on its own; use mode subGroup (the default)"))
	}
	if role.Replicas != nil && as.MinReplicas != nil && *role.Replicas != *as.MinReplicas {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *as.MinReplicas,
			fmt.Sprintf("differs from replicas (%d): an autoscaled role's replicas are its minimum; set one of them", *role.Replicas)))
	}
	if m := as.MinReplicas; m != nil && (*m < 1 || *m > MaxReplicas) {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *m, fmt.Sprintf("must be >= 1 and <= %d", MaxReplicas)))
	}
	switch {
	case as.MaxReplicas < 1 || as.MaxReplicas > MaxReplicas:
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), as.MaxReplicas, fmt.Sprintf("must be >= 1 and <= %d", MaxReplicas)))
	case as.MaxReplicas <= role.baseReplicas():
		// the autoscaler adds replicas above the base, to at most maxReplicas - base: none is a
		// ScaledObject KEDA's CRD refuses (spec.maxReplicaCount >= 1)
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), as.MaxReplicas,
			fmt.Sprintf("must be above minReplicas (%d): the autoscaler adds replicas above them; without room for one, remove autoscaling", role.baseReplicas())))
	}
	if as.Follow != nil {
		errs = append(errs, validateFollow(spec, role, path)...)
	} else {
		errs = append(errs, validateMetric(as, path)...)
	}
	if as.ScaleDownDelay != "" {
		if d, err := time.ParseDuration(as.ScaleDownDelay); err != nil || d < 0 || d > MaxScaleDownDelay {
			errs = append(errs, field.Invalid(path.Child("scaleDownDelay"), as.ScaleDownDelay,
				fmt.Sprintf(`must be a duration such as "5m", at most %s`, MaxScaleDownDelay)))
		}
	}
	return errs
}

// validateMetric checks a role's own metric and target.
func validateMetric(as *Autoscaling, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case as.Metric == "":
		errs = append(errs, field.Required(path.Child("metric"), strings.Join(KnownMetrics, ", ")+" or a PromQL query (or set follow instead)"))
	case metricName.MatchString(as.Metric):
		if !IsKnownMetric(as.Metric) {
			errs = append(errs, field.NotSupported(path.Child("metric"), as.Metric, append(KnownMetrics, "a PromQL query")))
		}
	default:
		if _, err := parser.ParseExpr(as.Metric); err != nil {
			errs = append(errs, field.Invalid(path.Child("metric"), as.Metric, "neither a known metric nor a PromQL query: "+err.Error()))
		}
	}
	if !(as.Target > 0) || math.IsInf(as.Target, 0) {
		errs = append(errs, field.Invalid(path.Child("target"), as.Target, "must be > 0: the metric's value one replica carries"))
	}
	return errs
}

// IsKnownMetric reports whether a role's metric is one of KnownMetrics, not a query.
func IsKnownMetric(name string) bool { return slices.Contains(KnownMetrics, name) }

// validateFollow checks a role that scales with another's load.
func validateFollow(spec *InferenceServiceSpec, role *Role, path *field.Path) field.ErrorList {
	as, follow := role.Autoscaling, role.Autoscaling.Follow
	path = path.Child("follow")
	var errs field.ErrorList
	if as.Metric != "" || as.Target != 0 {
		errs = append(errs, field.Forbidden(path, "a role scales with another role's load or with its own metric, not both: "+
			"remove metric and target, or follow"))
	}
	if !(follow.Ratio > 0) || math.IsInf(follow.Ratio, 0) {
		errs = append(errs, field.Invalid(path.Child("ratio"), follow.Ratio, "must be > 0: this role's replicas per replica of the other"))
	}
	followed := spec.RoleNamed(follow.Role)
	switch {
	case follow.Role == role.Name:
		errs = append(errs, field.Invalid(path.Child("role"), follow.Role, "a role cannot follow itself"))
	case followed == nil || !followed.ComponentType.Serving():
		errs = append(errs, field.NotFound(path.Child("role"), follow.Role))
	case followed.Autoscaling == nil || followed.Autoscaling.Follow != nil:
		errs = append(errs, field.Invalid(path.Child("role"), follow.Role,
			"must autoscale on a metric of its own (its autoscaling.metric): that load is what this role follows"))
	}
	return errs
}

// validateElasticNames refuses a role named "{role}-elastic" beside an autoscaled role: its
// replicas' StatefulSets would take the names of the elastic LWS's.
func validateElasticNames(spec *InferenceServiceSpec, rolesPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Roles {
		if spec.Roles[i].Autoscaling == nil {
			continue
		}
		for j := range spec.Roles {
			if spec.Roles[j].Name == spec.Roles[i].Name+ElasticSuffix {
				errs = append(errs, field.Invalid(rolesPath.Index(j).Child("name"), spec.Roles[j].Name, fmt.Sprintf(
					"role %q autoscales, and its elastic LWS has this role's names: rename one", spec.Roles[i].Name)))
			}
		}
	}
	return errs
}

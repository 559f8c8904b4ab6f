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

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// The metrics of vLLM's /metrics endpoint an autoscaled role may name (vLLM's metrics
// reference, docs/autoscaling.md); anything else is a PromQL query.
const (
	MetricRequestsWaiting = vllm.MetricRequestsWaiting
	MetricKVCacheUsage    = vllm.MetricKVCacheUsage
)

// MetricPickerRequests is the router's Endpoint Picker's load: the requests it holds in its
// flow-control queue and those running on the servers (eppconfig.Release.RequestSeries), the one
// known metric that exists while a role has no server.
const MetricPickerRequests = "epp:requests"

// KnownMetrics are the metric names an autoscaled role may give on their own.
var KnownMetrics = []string{MetricRequestsWaiting, MetricKVCacheUsage, MetricPickerRequests}

// MaxWakeTimeout bounds wakeTimeout: a request held longer than an hour has been given up on.
const MaxWakeTimeout = time.Hour

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
	if m := as.MinReplicas; m != nil && (*m < 0 || *m > MaxReplicas) {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *m, fmt.Sprintf("must be >= 0 and <= %d", MaxReplicas)))
	}
	errs = append(errs, validateScaleToZero(spec, role, path)...)
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
		errs = append(errs, validateMetric(spec.AutoscalingMetric(role), as.Target, path)...)
	}
	if as.ScaleDownDelay != "" {
		if d, err := time.ParseDuration(as.ScaleDownDelay); err != nil || d < 0 || d > MaxScaleDownDelay {
			errs = append(errs, field.Invalid(path.Child("scaleDownDelay"), as.ScaleDownDelay,
				fmt.Sprintf(`must be a duration such as "5m", at most %s`, MaxScaleDownDelay)))
		}
	}
	return errs
}

// validateScaleToZero checks what a role at zero replicas needs (docs/design/0047-scale-to-zero.md):
// a router whose picker holds the requests that arrive meanwhile, and a load that exists with no
// server running, for KEDA to wake it by. The picker's own load needs a picker that exports it.
func validateScaleToZero(spec *InferenceServiceSpec, role *Role, path *field.Path) field.ErrorList {
	as := role.Autoscaling
	var errs field.ErrorList
	var release EndpointPickerRelease
	if router := spec.Router(); router != nil {
		release = router.EndpointPickerRelease()
	}
	holding := strings.Join(eppconfig.HoldingReleases(), ", ")
	metric := spec.AutoscalingMetric(role)
	if metric == MetricPickerRequests && !release.HoldsRequestsAtZero() {
		why := "the service has no router"
		if release != "" {
			why = fmt.Sprintf("the Endpoint Picker of %s does not export it", release)
		}
		errs = append(errs, field.Invalid(path.Child("metric"), metric, fmt.Sprintf(
			"is the router's Endpoint Picker's load and %s: add a router role with endpointPicker.release one of %s", why, holding)))
	}
	if as.WakeTimeout != "" {
		if d, err := time.ParseDuration(as.WakeTimeout); err != nil || d <= 0 || d > MaxWakeTimeout {
			errs = append(errs, field.Invalid(path.Child("wakeTimeout"), as.WakeTimeout,
				fmt.Sprintf(`must be a duration such as "10m", above 0 and at most %s`, MaxWakeTimeout)))
		}
	}
	if !role.ScalesToZero() { // wakeTimeout is then unused, and its default may be given
		return errs
	}
	switch {
	case release == "":
		errs = append(errs, field.Invalid(path.Child("minReplicas"), 0, fmt.Sprintf(
			"a role at zero replicas has no server to answer: it needs a router whose Endpoint Picker holds requests until it wakes; add a router role (endpointPicker.release one of %s), or set minReplicas >= 1", holding)))
	case !release.HoldsRequestsAtZero():
		errs = append(errs, field.Invalid(path.Child("minReplicas"), 0, fmt.Sprintf(
			"the Endpoint Picker of %s has no flow control to hold a request while the role has no server: every request would fail until it wakes; use endpointPicker.release one of %s, or set minReplicas >= 1", release, holding)))
	case metric == MetricRequestsWaiting || metric == MetricKVCacheUsage:
		errs = append(errs, field.Invalid(path.Child("metric"), metric, fmt.Sprintf(
			"is a series of vLLM's servers, and at zero replicas none runs to report it, so nothing would wake the role: use %s (the Endpoint Picker's requests), or a query of the picker's series", MetricPickerRequests)))
	}
	return errs
}

// validateMetric checks a role's own metric (as given, or its default) and target.
func validateMetric(metric string, target float64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case metric == "":
		errs = append(errs, field.Required(path.Child("metric"), strings.Join(KnownMetrics, ", ")+" or a PromQL query (or set follow instead)"))
	case metricName.MatchString(metric):
		if !IsKnownMetric(metric) {
			errs = append(errs, field.NotSupported(path.Child("metric"), metric, append(KnownMetrics, "a PromQL query")))
		}
	default:
		if _, err := parser.ParseExpr(metric); err != nil {
			errs = append(errs, field.Invalid(path.Child("metric"), metric, "neither a known metric nor a PromQL query: "+err.Error()))
		}
	}
	if !(target > 0) || math.IsInf(target, 0) {
		errs = append(errs, field.Invalid(path.Child("target"), target, "must be > 0: the metric's value one replica carries"))
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

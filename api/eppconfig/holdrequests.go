// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// routerDefaultRequestTTL is llm-d-router v0.10.0's TTL of a queued request when flowControl sets
// none (pkg/epp/flowcontrol/controller/config.go defaultRequestTTL); GIE v1.5.0's is none at all
// (the same file: zero, the request's context alone bounds it).
const routerDefaultRequestTTL = 60 * time.Second

// HoldRequests makes the picker hold a request while its pool has no endpoint for at least ttl
// (a role scaled to zero: Release.HoldsRequestsAtZero). A preset gets the flowControl feature gate
// and flowControl.defaultRequestTTL ttl; a configuration of the user's must have both already,
// and the error says what it lacks.
func (s *Selection) HoldRequests(ttl time.Duration) error {
	if !s.Release.HoldsRequestsAtZero() {
		return fmt.Errorf("the Endpoint Picker of %s cannot hold a request while its pool has no endpoint", s.Release)
	}
	// The configuration's gates and TTL; a preset's flowControl is made where it has none, a
	// user's is only read.
	var gates *[]string
	var requestTTL **metav1.Duration
	switch {
	case s.Router != nil:
		if s.Router.FlowControl == nil && !s.custom {
			s.Router.FlowControl = &RouterFlowControl{}
		}
		gates, requestTTL = &s.Router.FeatureGates, new(*metav1.Duration)
		if s.Router.FlowControl != nil {
			requestTTL = &s.Router.FlowControl.DefaultRequestTTL
		}
	case s.GIE150 != nil:
		if s.GIE150.FlowControl == nil && !s.custom {
			s.GIE150.FlowControl = &GIE150FlowControl{}
		}
		gates, requestTTL = &s.GIE150.FeatureGates, new(*metav1.Duration)
		if s.GIE150.FlowControl != nil {
			requestTTL = &s.GIE150.FlowControl.DefaultRequestTTL
		}
	default:
		return fmt.Errorf("internal error: a %s selection without its configuration", s.Release)
	}
	if !s.custom {
		if !slices.Contains(*gates, gateFlowControl) {
			*gates = append(*gates, gateFlowControl)
		}
		*requestTTL = &metav1.Duration{Duration: ttl}
		return nil
	}
	given := time.Duration(0) // no TTL: held until the client leaves
	switch {
	case *requestTTL != nil:
		given = (*requestTTL).Duration
	case s.Router != nil:
		given = routerDefaultRequestTTL
	}
	switch {
	case !slices.Contains(*gates, gateFlowControl):
		return fmt.Errorf("a role at zero replicas needs the picker to hold requests until it wakes: "+
			"add %q to featureGates, and flowControl.defaultRequestTTL of at least %s (its wakeTimeout)", gateFlowControl, ttl)
	case given != 0 && given < ttl:
		return fmt.Errorf("flowControl.defaultRequestTTL is %s: a request that arrives while a role is at zero replicas "+
			"would be dropped before the role wakes; set it to at least %s (its wakeTimeout)", given, ttl)
	}
	return nil
}

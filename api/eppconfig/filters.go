// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The label filters of the Endpoint Pickers: a scheduling profile runs its filters over the
// pool's pods before it scores them, and a profile whose filters admit none of them fails every
// request it schedules (the gateway answers 503 with FailClose). What each filter admits, by the
// pod's labels, is its plugin's rule.

// labelFilter admits a pod by its labels.
type labelFilter func(podLabels map[string]string) bool

// byLabelRule is the by-label filter's rule (llm-d-router v0.10.0 scheduling/filter/bylabel/
// filter.go ByLabel.Filter; llm-d-inference-scheduler v0.4.0 pkg/plugins/filter/by_label.go):
// a pod passes when it has no such label and that is allowed, or its value is a valid one.
func byLabelRule(label string, allowsNoLabel bool, values ...string) labelFilter {
	return func(pod map[string]string) bool {
		value, defined := pod[label]
		return (!defined && allowsNoLabel) || slices.Contains(values, value)
	}
}

// roleLabel is the label llm-d's prefill/decode filters read.
const roleLabel = "llm-d.ai/role"

// roleFilters are the role filters of each release: llm-d-router v0.10.0's scheduling/filter/
// bylabel/roles.go (NewPrefillRole, NewDecodeRole, NewEncodeRole) and llm-d-inference-scheduler
// v0.4.0's pkg/plugins/filter/pd_role.go (the GIE v1.2.0 release's prefill/decode flavor).
var roleFilters = map[Release]map[string]labelFilter{
	ReleaseRouter: {
		PrefillFilter:   byLabelRule(roleLabel, false, "prefill", "encode-prefill", "prefill-decode", "both", "encode-prefill-decode"),
		DecodeFilter:    byLabelRule(roleLabel, true, "decode", "prefill-decode", "both", "encode-prefill-decode"),
		"encode-filter": byLabelRule(roleLabel, false, "encode", "encode-prefill", "encode-prefill-decode"),
	},
	ReleaseGIE: {
		PrefillFilter: byLabelRule(roleLabel, false, "prefill"),
		DecodeFilter:  byLabelRule(roleLabel, true, "decode", "both"),
	},
}

// filterOf is the label rule of a plugin of the release, and whether it has one.
func filterOf(release Release, pluginType string, parameters json.RawMessage) (labelFilter, bool) {
	if f, ok := roleFilters[release][pluginType]; ok {
		return f, true
	}
	switch pluginType {
	case ByLabelFilter:
		var p byLabelParameters
		if json.Unmarshal(parametersOrNil(parameters), &p) != nil && parameters != nil {
			return nil, false // refused by the configuration check
		}
		return byLabelRule(p.Label, p.AllowsNoLabel, p.ValidValues...), true
	case LabelSelectorFilter, ByLabelSelectorFilter:
		// scheduling/filter/bylabel/selector.go Selector.Filter: the label selector's Matches.
		var s metav1.LabelSelector
		if parameters != nil && json.Unmarshal(parameters, &s) != nil {
			return nil, false
		}
		selector, err := metav1.LabelSelectorAsSelector(&s)
		if err != nil {
			return nil, false
		}
		return func(pod map[string]string) bool { return selector.Matches(labels.Set(pod)) }, true
	}
	return nil, false
}

// UnreachableProfile names the first scheduling profile of the selection's configuration whose
// label filters admit none of the pool's pods (given by their labels), or is nil. A profile
// without filters admits every pod. The message lists the pods' labels but those in omit (the
// labels each replica differs by).
func (s *Selection) UnreachableProfile(pods []map[string]string, omit ...string) error {
	type plugin struct {
		pluginType string
		parameters json.RawMessage
	}
	byName := map[string]plugin{}
	var profiles []RouterSchedulingProfile
	switch {
	case s.Router != nil:
		for _, p := range s.Router.Plugins {
			byName[p.Name] = plugin{p.Type, p.Parameters}
		}
		profiles = s.Router.SchedulingProfiles
	case s.Config != nil:
		for _, p := range s.Config.Plugins {
			byName[cmpOr(p.Name, p.Type)] = plugin{p.Type, p.Parameters}
		}
		for _, profile := range s.Config.SchedulingProfiles {
			refs := make([]RouterSchedulingPlugin, len(profile.Plugins))
			for i, ref := range profile.Plugins {
				refs[i] = RouterSchedulingPlugin{PluginRef: ref.PluginRef}
			}
			profiles = append(profiles, RouterSchedulingProfile{Name: profile.Name, Plugins: refs})
		}
	default:
		return nil // GIE v1.5.0 and lwepp have no label filters
	}
	for i, profile := range profiles {
		var filters []string
		admitted := slices.Clone(pods)
		for _, ref := range profile.Plugins {
			p, ok := byName[ref.PluginRef]
			if !ok {
				continue
			}
			f, isFilter := filterOf(s.Release, p.pluginType, p.parameters)
			if !isFilter {
				continue
			}
			filters = append(filters, fmt.Sprintf("'%s' (%s)", ref.PluginRef, p.pluginType))
			admitted = slices.DeleteFunc(admitted, func(pod map[string]string) bool { return !f(pod) })
		}
		if len(filters) > 0 && len(admitted) == 0 {
			return fmt.Errorf("schedulingProfiles[%d] '%s': its filters %s admit none of the InferencePool's pods, so every request it schedules fails; "+
				"the pool's pods carry: %s", i, profile.Name, strings.Join(filters, ", "), describePods(pods, omit))
		}
	}
	return nil
}

// describePods lists the distinct label sets of pods, without the labels in omit.
func describePods(pods []map[string]string, omit []string) string {
	seen := map[string]bool{}
	var out []string
	for _, pod := range pods {
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(pod)) {
			if !slices.Contains(omit, k) {
				pairs = append(pairs, k+"="+pod[k])
			}
		}
		text := "{" + strings.Join(pairs, ", ") + "}"
		if !seen[text] {
			seen[text] = true
			out = append(out, text)
		}
	}
	return strings.Join(out, "; ")
}

// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
)

// The invariants of a role that scales to zero (docs/design/0047-scale-to-zero.md): what wakes
// it, what the gang needs of it, and how long a request waits for it.

// basePod reports whether a pod runs while its role is at its minimum: it is not of an elastic
// LWS, which the autoscaler may leave at none.
func basePod(pod *Pod, tree *render.Tree) bool {
	return pod.Role == "" || pod.LWS != api.ElasticLeaderWorkerSetName(tree.Service.Name, pod.Role)
}

// rolesAtZero are the serving roles with no pod but their elastic LWS's.
func rolesAtZero(tree *render.Tree, pods []*Pod) map[string]bool {
	out := map[string]bool{}
	for _, pod := range pods {
		if pod.Role != "" && tree.Service.Spec.RoleNamed(pod.Role).Autoscaled() {
			out[pod.Role] = out[pod.Role] || !basePod(pod, tree)
		}
	}
	for _, pod := range pods {
		if pod.Role != "" && basePod(pod, tree) && pod.LWS != "" {
			delete(out, pod.Role)
		}
	}
	return out
}

// KEDA can wake a role at zero only from a series that something running reports: every
// series its query reads comes from pods that run while every role at zero has none, and some
// program of theirs serves metrics (a picker, or a server of a role that does not scale to zero).
func aRoleAtZeroWakesOnARunningPod(tree *render.Tree, pods []*Pod) []string {
	zero := rolesAtZero(tree, pods)
	var out []string
	for _, so := range Objects[*keda.ScaledObject](tree) {
		if !zero[so.Labels[render.LabelRoleName]] {
			continue
		}
		for _, trigger := range so.Spec.Triggers {
			selectors, err := vectorSelectors(trigger.Metadata["query"])
			if err != nil {
				continue // kedaQueries says it
			}
			for _, vs := range selectors {
				i := slices.IndexFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == "pod" })
				if i < 0 {
					out = append(out, fmt.Sprintf("ScaledObject %s wakes a role at zero on %s, which names no pod: nothing says it exists at zero", so.Name, vs))
					continue
				}
				reporting := 0
				for _, pod := range pods {
					if !vs.LabelMatchers[i].Matches(pod.Name) {
						continue
					}
					if zero[pod.Role] {
						out = append(out, fmt.Sprintf("ScaledObject %s wakes a role at zero on %s, a series of %s, which does not run at zero", so.Name, vs, pod.Desc))
					}
					if slices.ContainsFunc(pod.Processes, func(p *Process) bool { return p.Program == ProgramEndpointPicker || p.Program == ProgramVLLM }) {
						reporting++
					}
				}
				if reporting == 0 {
					out = append(out, fmt.Sprintf("ScaledObject %s wakes a role at zero on %s, which no running picker or server reports", so.Name, vs))
				}
			}
		}
	}
	return out
}

// The gang's minimum is met by the pods that run while every autoscaled role is at its minimum:
// the shared PodGroup requires no pod of an elastic LWS (none at all of a role at zero), in total
// and in each subgroup.
func aGangNeedsNoElasticPod(tree *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pg := range Objects[*volcanov1beta1.PodGroup](tree) {
		var base []*Pod
		for _, pod := range pods {
			if pod.LWS != "" && basePod(pod, tree) {
				base = append(base, pod)
			}
		}
		if int(pg.Spec.MinMember) > len(base) {
			out = append(out, fmt.Sprintf("PodGroup %s requires %d pods; only %d run at the roles' minimums", pg.Name, pg.Spec.MinMember, len(base)))
		}
		for _, sub := range pg.Spec.SubGroupPolicy {
			selector, err := metav1.LabelSelectorAsSelector(sub.LabelSelector)
			if err != nil {
				out = append(out, fmt.Sprintf("PodGroup %s subgroup %s: %v", pg.Name, sub.Name, err))
				continue
			}
			matched := 0
			for _, pod := range base {
				if selector.Matches(k8slabels.Set(pod.Labels)) {
					matched++
				}
			}
			need := int(ptrOr(sub.MinSubGroups) * ptrOr(sub.SubGroupSize))
			if need > matched {
				out = append(out, fmt.Sprintf("PodGroup %s subgroup %s requires %d pods; %d of its pods run at the roles' minimums", pg.Name, sub.Name, need, matched))
			}
		}
	}
	return out
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// A request that arrives while a role is at zero is held until it wakes, and nothing on its way
// gives up first: the picker holds it (the flowControl feature gate) for at least the role's
// wakeTimeout, and the proxy's wait for the picker's answer and the HTTPRoute's request timeout
// are longer than that.
func aHeldRequestOutlivesEveryTimeout(tree *render.Tree, pods []*Pod) []string {
	wake := tree.Service.Spec.WakeTimeout()
	if wake == 0 {
		return nil
	}
	var config struct {
		FeatureGates []string `json:"featureGates"`
		FlowControl  struct {
			DefaultRequestTTL *metav1.Duration `json:"defaultRequestTTL"`
		} `json:"flowControl"`
	}
	text := ""
	for _, cm := range Objects[*corev1.ConfigMap](tree) {
		if cm.Name == api.EndpointPickerConfigName(tree.Service.Name) {
			for _, v := range cm.Data {
				text = v
			}
		}
	}
	if err := yaml.Unmarshal([]byte(text), &config); err != nil {
		return []string{fmt.Sprintf("the Endpoint Picker's configuration: %v", err)}
	}
	if !slices.Contains(config.FeatureGates, "flowControl") || config.FlowControl.DefaultRequestTTL == nil {
		return []string{fmt.Sprintf("a role waits at zero and the Endpoint Picker does not hold requests (featureGates %v, flowControl.defaultRequestTTL %v)",
			config.FeatureGates, config.FlowControl.DefaultRequestTTL)}
	}
	ttl := config.FlowControl.DefaultRequestTTL.Duration
	var out []string
	if ttl < wake {
		out = append(out, fmt.Sprintf("the Endpoint Picker holds a request %s, less than the wake of %s", ttl, wake))
	}
	for _, pod := range pods {
		for _, p := range pod.Processes {
			for _, timeout := range p.ExtProcMessageTimeouts {
				if timeout <= ttl {
					out = append(out, fmt.Sprintf("%s: %s gives the picker's answer %s, no longer than the %s it holds a request", pod.Desc, p.Name, timeout, ttl))
				}
			}
		}
	}
	for _, route := range Objects[*gatewayv1.HTTPRoute](tree) {
		for i, rule := range route.Spec.Rules {
			if rule.Timeouts == nil || rule.Timeouts.Request == nil {
				continue
			}
			if d, err := time.ParseDuration(string(*rule.Timeouts.Request)); err != nil || d <= ttl {
				out = append(out, fmt.Sprintf("HTTPRoute %s rule %d: a request timeout of %s, no longer than the %s the picker holds a request", route.Name, i, *rule.Timeouts.Request, ttl))
			}
		}
	}
	return out
}

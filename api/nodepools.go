// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agext/levenshtein"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// GPUNodeTaint is on every node of a karpenter pool: it keeps pods that ask for no GPU off GPU
// nodes; the service's pods tolerate it.
var GPUNodeTaint = corev1.Taint{Key: string(GPUResourceName), Value: "true", Effect: corev1.TaintEffectNoSchedule}

// MaxConsolidateAfter bounds a karpenter pool's consolidateAfter: a longer wait is a typo more
// often than a wish to pay for idle GPU nodes for days.
const MaxConsolidateAfter = 24 * time.Hour

// InstanceFamilyLabel is the node label of Karpenter's AWS provider a karpenter pool's
// instanceFamilies require (its instanceTypes require corev1.LabelInstanceTypeStable).
const InstanceFamilyLabel = "karpenter.k8s.aws/instance-family"

// validateKarpenterPool refuses what Karpenter would refuse of the pool's NodePool, or accept and
// never launch a node for, where the spec alone shows it: labels Karpenter's NodePool validation
// refuses (a NodePool that fails it is never Ready: karpenter.KarpenterRefusesNodeLabel), labels that
// contradict the pool's own instance types, families or capacity types (Karpenter requires a
// template label of every node, so no instance type can satisfy both), and taints Karpenter's
// validation refuses (sigs.k8s.io/karpenter v1.8.0 pkg/apis/v1/nodeclaim_validation.go,
// validateTaintsField: a value that is not a qualified name; a key and effect twice, GPUNodeTaint's
// among them). What only the cloud knows (whether a shape has the GPUs, a zone the offerings)
// `fusioninfer status` names from Karpenter's events.
func validateKarpenterPool(pool *NodePool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pool.ConsolidateAfter != "" {
		// Whole seconds: the NodePool's consolidateAfter must match ^(([0-9]+(s|m|h))+|Never)$
		// (sigs.k8s.io/karpenter v1.8.0 pkg/apis/v1/nodepool.go, the field's kubebuilder pattern), so
		// "1.5s" or "500ms" would pass here and be refused by the API server at pulumi up.
		if d, err := time.ParseDuration(pool.ConsolidateAfter); err != nil || d < 0 || d > MaxConsolidateAfter || d%time.Second != 0 {
			errs = append(errs, field.Invalid(p.Child("consolidateAfter"), pool.ConsolidateAfter,
				fmt.Sprintf(`must be a duration in whole seconds such as "10m" or "90s", at most %s`, MaxConsolidateAfter)))
		}
	}
	requirements := map[string][]string{karpenter.CapacityTypeLabelKey: pool.CapacityTypeValues(), corev1.LabelInstanceTypeStable: pool.InstanceTypes,
		InstanceFamilyLabel: pool.InstanceFamilies}
	requirementFields := map[string]string{karpenter.CapacityTypeLabelKey: "capacityTypes", corev1.LabelInstanceTypeStable: "instanceTypes",
		InstanceFamilyLabel: "instanceFamilies"}
	for _, key := range slices.Sorted(maps.Keys(pool.Labels)) {
		lp := p.Child("labels").Key(key)
		switch value := pool.Labels[key]; {
		case key == karpenter.NodePoolLabelKey:
			errs = append(errs, field.Invalid(lp, key, "Karpenter sets it to the NodePool's name on every node of the pool"))
		case karpenter.KarpenterRefusesNodeLabel(key):
			msg := fmt.Sprintf("Karpenter refuses a NodePool label in the domains it keeps for the kubelet and itself (%s) "+
				"unless it knows it (%s): such a NodePool is never ready and launches no node; use a key of your own domain",
				strings.Join(karpenter.KarpenterRestrictedLabelDomains, ", "), strings.Join(karpenter.KarpenterWellKnownLabels, ", "))
			if near := nearestWellKnownLabel(key); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			errs = append(errs, field.Invalid(lp, key, msg))
		case len(requirements[key]) > 0 && !slices.Contains(requirements[key], value):
			errs = append(errs, field.Invalid(lp, value, fmt.Sprintf(
				"contradicts %s %s: Karpenter gives every node of the pool both, and no instance type has both; set %s instead",
				requirementFields[key], strings.Join(requirements[key], ", "), requirementFields[key])))
		}
	}
	seen := map[string]bool{GPUNodeTaint.Key + ":" + string(GPUNodeTaint.Effect): true}
	for j, taint := range pool.Taints {
		tp := p.Child("taints").Index(j)
		if taint.Value != "" {
			for _, msg := range validation.IsQualifiedName(taint.Value) {
				errs = append(errs, field.Invalid(tp.Child("value"), taint.Value, "Karpenter takes a qualified name here: "+msg))
			}
		}
		pair := taint.Key + ":" + string(taint.Effect)
		if seen[pair] {
			msg := "Karpenter refuses a key and effect twice"
			if taint.Key == GPUNodeTaint.Key {
				msg += fmt.Sprintf(": every node of a karpenter pool has %s=%s:%s already, and the pods tolerate it",
					GPUNodeTaint.Key, GPUNodeTaint.Value, GPUNodeTaint.Effect)
			}
			errs = append(errs, field.Invalid(tp, pair, msg))
		}
		seen[pair] = true
	}
	return errs
}

// fieldsNotForPool are the JSON names of the fields set on pool that do not apply to its kind
// (their pools tag names another).
func fieldsNotForPool(pool *NodePool) []string {
	var misplaced []string
	v := reflect.ValueOf(pool).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if kinds, ok := f.Tag.Lookup("pools"); ok && kinds != string(pool.PoolKind()) && !v.Field(i).IsZero() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			misplaced = append(misplaced, name)
		}
	}
	return misplaced
}

// nearestWellKnownLabel is the label Karpenter knows that key is one or two edits from, if any.
func nearestWellKnownLabel(key string) string {
	best, bestDistance := "", 3
	for _, known := range karpenter.KarpenterWellKnownLabels {
		if d := levenshtein.Distance(key, known, nil); d < bestDistance {
			best, bestDistance = known, d
		}
	}
	return best
}

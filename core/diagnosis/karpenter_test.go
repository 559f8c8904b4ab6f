// SPDX-License-Identifier: Apache-2.0

package diagnosis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// The karpenter-* fixtures are states of the real Karpenter v1.8.0 (its kwok provider) with the
// real LWS, Volcano and KEDA, recorded by tests/e2e/karpenter (FUSIONINFER_RECORD_FIXTURES=1): a
// role held past its maxReplicas by its pool's limit; an elastic replica of 2 pods that found one
// empty node of its pool (Volcano holds one pod there, Karpenter counts the node for the other); a
// pod of 16 GPUs no shape has; a pool in a zone no offering has; a pool whose node class is missing.

// TestDiagnosisOfKarpenterPools: each recorded state gives its pool the cause Karpenter's and
// Volcano's own objects and events show, with numbers and a fix; and the variations that must not
// (a NodeClaim still launching is no wait for ever; another pool's limit in Karpenter's event is not
// this pool's) do not.
func TestDiagnosisOfKarpenterPools(t *testing.T) {
	cases := []struct {
		name, fixture string
		mutate        func(o *diagnosis.Observed)
		want, absent  []string
	}{
		{name: "a limit reached", fixture: "karpenter-limit-reached", want: []string{
			"NodePool/karpenter-limit-h100: LimitReached: Karpenter launches no node beyond the pool's limit of 32 nvidia.com/gpu: " +
				"its nodes have 32, and 4 pods wait for a node, asking for 32, 32 more than the limit leaves " +
				"(Karpenter: all available instance types exceed limits for nodepool (NodePool=karpenter-limit-h100))",
			"fix: the limit is the service at full size (autoscaled roles at maxReplicas) plus one rollout batch's surge",
		}},
		{name: "a limit reached, without Karpenter's event: no guess from the numbers", fixture: "karpenter-limit-reached",
			mutate: func(o *diagnosis.Observed) { o.Events = nil }, absent: []string{"LimitReached"}},
		{name: "nodes Volcano holds that Karpenter counts as free", fixture: "karpenter-held-nodes", want: []string{
			"NodePool/karpenter-held-h100: NodesHeldForIncompleteGangs: Volcano holds 1 pod (karpenter-held-chat-elastic-0) for the " +
				"pool's 1 empty node (",
			"Karpenter counts those empty nodes for the 1 pod Volcano marks Unschedulable (karpenter-held-chat-elastic-0-1)",
			"fix: remove the pool's empty nodes, so that every pod waits Unschedulable and Karpenter launches for all of them at once: " +
				"kubectl delete nodeclaim karpenter-held-h100-",
			"karpenter-held-chat-elastic  Pending  NodePool/karpenter-held-h100: waits for a node of the pool (its cause above); " +
				"Volcano: Pod karpenter-held/karpenter-held-chat-elastic-0 can possibly be assigned to ",
		}},
		{name: "the same while a NodeClaim of the pool still launches: a node is on its way", fixture: "karpenter-held-nodes",
			mutate: func(o *diagnosis.Observed) {
				nc := &o.NodeClaims[0]
				for i := range nc.Status.Conditions {
					if nc.Status.Conditions[i].Type == karpenter.ConditionTypeInitialized {
						nc.Status.Conditions[i].Status = metav1.ConditionUnknown
					}
				}
			}, absent: []string{"NodesHeldForIncompleteGangs"}},
		{name: "the same with the empty node gone: nothing held", fixture: "karpenter-held-nodes",
			mutate: func(o *diagnosis.Observed) {
				bound := map[string]bool{}
				for _, p := range o.Pods {
					bound[p.Spec.NodeName] = true
				}
				keep := o.Nodes[:0]
				for _, n := range o.Nodes {
					if bound[n.Name] {
						keep = append(keep, n)
					}
				}
				o.Nodes = keep
			}, absent: []string{"NodesHeldForIncompleteGangs"}},
		{name: "a GPU count no shape has", fixture: "karpenter-no-instance-type", want: []string{
			"NodePool/karpenter-nogpus-gpu: NoInstanceType: Karpenter finds no instance type of the pool for pod " +
				"karpenter-nogpus-chat-0-0 (16 nvidia.com/gpu on one node): no instance type has enough resources",
			`resources={"nvidia.com/gpu":"16","pods":"1"}`,
			"karpenter-nogpus-chat-0  Pending  NodePool/karpenter-nogpus-gpu: waits for a node of the pool (its cause above)",
		}, absent: []string{"LimitReached"}},
		{name: "another pool's limit in Karpenter's event is not this pool's", fixture: "karpenter-no-instance-type",
			mutate: func(o *diagnosis.Observed) {
				for i := range o.Events {
					if o.Events[i].Source.Component == "karpenter" && strings.HasPrefix(o.Events[i].Message, "Failed to schedule pod") {
						o.Events[i].Message += "; all available instance types exceed limits for nodepool (NodePool=another-h100)"
					}
				}
			}, want: []string{"NoInstanceType"}, absent: []string{"LimitReached"}},
		{name: "a zone no offering has", fixture: "karpenter-unknown-zone", want: []string{
			"NodePool/karpenter-nozone-gpu: NoInstanceType: Karpenter launches nothing for the pool: NodePool requirements filtered out " +
				"all compatible available instance types",
		}},
		{name: "a limit raised since Karpenter's event: the event speaks of the pool as it was", fixture: "karpenter-limit-reached",
			mutate: changedAfterTheEvents, absent: []string{"LimitReached"}},
		{name: "a zone mended since Karpenter's warning: the warning speaks of the pool as it was", fixture: "karpenter-unknown-zone",
			mutate: changedAfterTheEvents, absent: []string{"NoInstanceType"}},
		{name: "a node class that does not exist", fixture: "karpenter-no-node-class", want: []string{
			"NodePool/karpenter-noclass-gpu: UnhealthyDependents: Karpenter launches no node for the pool: NodeClassReady=False; NodeClassReady: ",
			"the pool's nodeClassRef must name a node class that exists and is ready",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, tc.fixture)
			if tc.mutate != nil {
				tc.mutate(o)
			}
			name, namespace := o.LeaderWorkerSets[0].Labels["fusioninfer.io/service"], o.LeaderWorkerSets[0].Namespace
			report := diagnosis.Diagnose(name, namespace, nil, o)
			text := report.Text()
			assert.NotEqual(t, diagnosis.Running, report.Phase, text)
			assert.Equal(t, 2, report.ExitCode(), "not running yet: waiting may help")
			for _, w := range tc.want {
				assert.Contains(t, text, w)
			}
			for _, a := range tc.absent {
				assert.NotContains(t, text, a)
			}
		})
	}
}

// changedAfterTheEvents has the service's NodePools written by a pulumi up a minute after the last
// event: what Karpenter said before is of the pools as they were.
func changedAfterTheEvents(o *diagnosis.Observed) {
	var last time.Time
	for _, e := range o.Events {
		last = maxTime(last, e.LastTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time)
	}
	at := metav1.NewTime(last.Add(time.Minute))
	for i := range o.NodePools {
		o.NodePools[i].ManagedFields = append(o.NodePools[i].ManagedFields,
			metav1.ManagedFieldsEntry{Manager: "pulumi-kubernetes", Operation: metav1.ManagedFieldsOperationApply, Time: &at})
	}
}

func maxTime(times ...time.Time) time.Time {
	var out time.Time
	for _, t := range times {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package karpenter

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// TestKarpenterCountsTheNodesVolcanoHoldsAsFree is the cause of the hang issue 25 saw, on the real
// Karpenter, Volcano and KEDA. An autoscaled role of 2-node replicas scales up by one replica
// (Karpenter launches its 2 nodes), down again (its 2 nodes stay empty for the pool's
// consolidateAfter), Karpenter removes one of the two (as its disruption budget has it remove one
// empty node at a time), and the load comes back: the replica's 2 pods find 1 empty node. Volcano
// places one pod on it in its session, finds no node for the other, and, the replica not whole,
// binds neither: it marks the first "Schedulable" (volcano pkg/scheduler/api/job_info.go
// TaskSchedulingReason, once framework/statement.go Discard undid the placement) and the second
// "Unschedulable". Karpenter launches only for Unschedulable pods (karpenter
// pkg/utils/pod/scheduling.go IsProvisionable) and places them first on the nodes it has, so it
// counts the empty node for the second pod and launches nothing: neither acts again. `fusioninfer
// status` names it, and its fix (remove the empty node: both pods then wait Unschedulable, and
// Karpenter launches for both) lets the replica run whole.
func TestKarpenterCountsTheNodesVolcanoHoldsAsFree(t *testing.T) {
	prometheus := harness.NewPrometheus(t)
	svc := autoscaled(t, "karpenter-held", prometheus.URL, 1, 2, "10m")
	harness.EnsureNamespace(t, svc.Namespace)
	pool := api.KarpenterNodePoolName(svc.Name, "h100")
	elastic := api.ElasticLeaderWorkerSetName(svc.Name, "chat")
	s := deploy(t, svc)
	s.Up()
	base := placement(t, svc.Namespace, true)
	holdAt := func(replicas int) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"autoscaling.keda.sh/paused-replicas":"%d"}}}`, replicas)
		_, err := harness.Cluster.Dynamic.Resource(scaledObjects).Namespace(svc.Namespace).Patch(context.Background(), elastic,
			types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
		waitFor(t, 2*time.Minute, fmt.Sprintf("KEDA holds the elastic LWS at %d replicas", replicas), func() error {
			return lwsReplicas(t, svc.Namespace, elastic, int64(replicas))
		})
	}
	holdAt(1)
	waitFor(t, testcluster.NodeStartupTime+2*time.Minute, "Karpenter launches the elastic replica's 2 nodes and it runs", func() error {
		if placed := placement(t, svc.Namespace, false); len(placed) != 2 {
			return fmt.Errorf("%d of 2 elastic pods placed", len(placed))
		}
		return nil
	})
	var elasticNodes []string
	for _, node := range placement(t, svc.Namespace, false) {
		elasticNodes = append(elasticNodes, node)
	}
	slices.Sort(elasticNodes)
	holdAt(0)
	waitFor(t, time.Minute, "the elastic replica's pods are gone", func() error {
		if pods := podsOf(t, svc.Namespace, elastic); len(pods) > 0 {
			return fmt.Errorf("%d elastic pods left", len(pods))
		}
		return nil
	})
	removed := claimOfNode(t, pool, elasticNodes[0])
	require.NoError(t, harness.Cluster.Dynamic.Resource(nodeClaimsResource).Delete(context.Background(), removed, metav1.DeleteOptions{}))
	waitFor(t, 2*time.Minute, "one of the two empty nodes is removed", func() error {
		if _, err := harness.Cluster.Dynamic.Resource(nodeClaimsResource).Get(context.Background(), removed, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NodeClaim %s is still there (%v)", removed, err)
		}
		if _, err := harness.Cluster.Clientset.CoreV1().Nodes().Get(context.Background(), elasticNodes[0], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s is still there (%v)", elasticNodes[0], err)
		}
		return nil
	})
	claimsBefore := len(nodeClaims(t, pool))

	holdAt(1)
	reasons := func() (held, unschedulable []string, placed int) {
		for _, pod := range podsOf(t, svc.Namespace, elastic) {
			if pod.Spec.NodeName != "" {
				placed++
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
					switch c.Reason {
					case "Schedulable":
						held = append(held, pod.Name)
					case corev1.PodReasonUnschedulable:
						unschedulable = append(unschedulable, pod.Name)
					}
				}
			}
		}
		return held, unschedulable, placed
	}
	waitFor(t, time.Minute, "Volcano holds one pod for the empty node and marks the other Unschedulable", func() error {
		if held, unschedulable, _ := reasons(); len(held) != 1 || len(unschedulable) != 1 {
			return fmt.Errorf("held %v, unschedulable %v", held, unschedulable)
		}
		return nil
	})
	// Karpenter looks again at a provisionable pod every 10 s: three looks, and no node.
	for end := time.Now().Add(35 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		held, unschedulable, placed := reasons()
		require.Zero(t, placed, "Volcano binds no pod of the replica")
		require.Equal(t, []int{1, 1}, []int{len(held), len(unschedulable)}, "held %v, unschedulable %v", held, unschedulable)
		require.Equal(t, claimsBefore, len(nodeClaims(t, pool)), "Karpenter launches nothing: it counts the empty node for the Unschedulable pod")
	}
	held, unschedulable, _ := reasons()
	events, err := harness.Cluster.Clientset.CoreV1().Events(svc.Namespace).List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + unschedulable[0] + ",reason=Nominated"})
	require.NoError(t, err)
	require.NotEmpty(t, events.Items, "Karpenter says where it expects the Unschedulable pod to go")
	assert.Contains(t, events.Items[len(events.Items)-1].Message, "node/"+elasticNodes[1], "the empty node Volcano holds for the other pod")

	out, code := harness.Status(t, svc)
	assert.Equal(t, 2, code, "not running yet")
	assert.Contains(t, out, "NodePool/"+pool+": NodesHeldForIncompleteGangs: Volcano holds 1 pod ("+held[0]+")")
	assert.Contains(t, out, fmt.Sprintf("for the pool's 1 empty node (%s)", elasticNodes[1]))
	assert.Contains(t, out, "Karpenter counts those empty nodes for the 1 pod Volcano marks Unschedulable ("+unschedulable[0]+")")
	assert.Contains(t, out, "karpenter-held-chat-elastic  Pending  NodePool/"+pool+": waits for a node of the pool (its cause above)",
		"the replica points at its pool's cause")
	left := claimOfNode(t, pool, elasticNodes[1])
	assert.Contains(t, out, "fix: remove the pool's empty nodes, so that every pod waits Unschedulable and Karpenter launches for all of "+
		"them at once: kubectl delete nodeclaim "+left)
	harness.RecordFixture(t, svc, "karpenter-held-nodes")

	// The fix: with the node gone both pods wait Unschedulable, and Karpenter launches for both.
	bound := watchBindings(t, svc.Namespace)
	require.NoError(t, harness.Cluster.Dynamic.Resource(nodeClaimsResource).Delete(context.Background(), left, metav1.DeleteOptions{}))
	waitFor(t, testcluster.NodeStartupTime+2*time.Minute, "with the empty node removed, Karpenter launches a node for each pod and the replica runs", func() error {
		if _, _, placed := reasons(); placed != 2 {
			return fmt.Errorf("%d of 2 pods placed", placed)
		}
		return nil
	})
	bound.requireWhole(t)
	assert.Equal(t, base, placement(t, svc.Namespace, true), "the base replica never moved")
	s.Destroy()
}

// podsOf are the pods of an LWS that are not being deleted.
func podsOf(t *testing.T, namespace, lws string) []corev1.Pod {
	t.Helper()
	pods, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + lws})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			out = append(out, pod)
		}
	}
	return out
}

// claimOfNode is the name of the pool's NodeClaim of a node.
func claimOfNode(t *testing.T, pool, node string) string {
	t.Helper()
	for _, claim := range nodeClaims(t, pool) {
		if claim.Status.NodeName == node {
			return claim.Name
		}
	}
	t.Fatalf("no NodeClaim of %s has node %s", pool, node)
	return ""
}

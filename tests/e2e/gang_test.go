// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// story4 is the disaggregated multi-node story (prefill x 2 nodes, decode x 4 nodes, 8 GPUs a
// node) with 2 prefill and 3 decode replicas, all 16 nodes at full size, in namespace.
func story4(t *testing.T, namespace string, await api.AwaitMode) *api.InferenceService {
	t.Helper()
	services := harness.ManifestServices(t, filepath.Join(testcluster.RepositoryRoot(), "examples", "manifests", "story4-disaggregated-multinode.yaml"))
	svc := services[0]
	svc.Namespace = namespace
	svc.Spec.Await = await
	svc.Spec.Roles[0].Replicas = ptr.To(2)
	svc.Spec.Roles[1].Replicas = ptr.To(3)
	return svc
}

// replicaPlacement is how many pods of one replica (LWS) are scheduled to a node.
type replicaPlacement struct {
	role      string
	scheduled int
}

// placement is, per LWS of the service, its role and its pods scheduled to a node.
func placement(t *testing.T, namespace string) map[string]replicaPlacement {
	t.Helper()
	pods, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]replicaPlacement{}
	for _, pod := range pods.Items {
		lws := pod.Labels["leaderworkerset.sigs.k8s.io/name"]
		p := out[lws]
		p.role = pod.Labels[render.LabelRoleName]
		if pod.Spec.NodeName != "" {
			p.scheduled++
		}
		out[lws] = p
	}
	return out
}

// settledPlacement waits until every pod of the service exists and the placement has not changed
// for 20 s (Volcano schedules every second), and returns it.
func settledPlacement(t *testing.T, namespace string, pods int) map[string]replicaPlacement {
	t.Helper()
	var last map[string]replicaPlacement
	stableSince := time.Now()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		now := placement(t, namespace)
		if fmt.Sprint(now) != fmt.Sprint(last) {
			last, stableSince = now, time.Now()
		}
		created, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		if len(created.Items) == pods && time.Since(stableSince) > 20*time.Second {
			return last
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("placement did not settle: %v", last)
	return nil
}

// The gang rules on the real Volcano scheduler (the seed's scheduling table): on 16 nodes the
// whole service runs; on 8, whole replicas only, at least one prefill and one decode; on 5, too
// few for one prefill (2 nodes) and one decode (4), nothing.
func TestGangOnTheRealScheduler(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		check func(t *testing.T, replicas map[string]int)
	}{
		{16, func(t *testing.T, replicas map[string]int) {
			assert.Equal(t, map[string]int{"prefill": 2, "decode": 3}, replicas, "everything runs")
		}},
		{8, func(t *testing.T, replicas map[string]int) {
			assert.GreaterOrEqual(t, replicas["prefill"], 1, "at least one prefill")
			assert.GreaterOrEqual(t, replicas["decode"], 1, "at least one decode")
			assert.LessOrEqual(t, 2*replicas["prefill"]+4*replicas["decode"], 8)
		}},
		{5, func(t *testing.T, replicas map[string]int) {
			assert.Equal(t, map[string]int{"prefill": 0, "decode": 0}, replicas, "nothing runs")
		}},
	} {
		t.Run(fmt.Sprintf("%d nodes", tc.nodes), func(t *testing.T) {
			prefix := fmt.Sprintf("gang%d", tc.nodes)
			harness.AddGPUNodes(t, prefix, tc.nodes)
			namespace := prefix
			harness.EnsureNamespace(t, namespace)
			svc := story4(t, namespace, api.AwaitNone) // nothing to wait for where nothing can run
			s := harness.NewStack(t, harness.ServicesProgram(svc))
			s.Up()
			placed := settledPlacement(t, namespace, 2*2+3*4)
			replicas := map[string]int{"prefill": 0, "decode": 0}
			size := map[string]int{"prefill": 2, "decode": 4}
			for lws, p := range placed {
				assert.Contains(t, []int{0, size[p.role]}, p.scheduled, "%s is placed whole or not at all", lws)
				if p.scheduled == size[p.role] {
					replicas[p.role]++
				}
			}
			tc.check(t, replicas)
			s.Destroy()
		})
	}
}

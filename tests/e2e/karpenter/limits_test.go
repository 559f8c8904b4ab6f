// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package karpenter

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

var scaledObjects = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// TestKarpenterPoolLimitStopsARunaway: an autoscaled role of 2-node replicas, base 1, at most 2:
// its pool's limit is 2 replicas' nodes (`fusioninfer plan` says so). An operator holds the
// autoscaler at 4 replicas, past maxReplicas (KEDA's paused-replicas annotation, which scales the
// LWS to that count whatever maxReplicas says): Karpenter launches nodes up to the limit and no
// further, the replicas beyond it wait Pending, none of them placed in part, and `fusioninfer
// status` names the pool, its limit, what its nodes have and what the waiting pods ask.
func TestKarpenterPoolLimitStopsARunaway(t *testing.T) {
	prometheus := harness.NewPrometheus(t)
	svc := autoscaled(t, "karpenter-limit", prometheus.URL, 1, 2, "10m")
	harness.EnsureNamespace(t, svc.Namespace)
	pool := api.KarpenterNodePoolName(svc.Name, "h100")
	limits := render.PoolLimits(&svc.Spec, svc.Name)
	require.Len(t, limits, 1)
	limit := limits[0]
	require.Equal(t, int64(4), limit.Nodes, "2 replicas of 2 nodes at maxReplicas, no surge")

	out, code := plan(t, svc, "--nodes", "4", "--gpus-per-node", "8")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Node pool h100: Karpenter launches at most 32 GPUs (NodePool "+pool+"'s limit, 4 nodes of 8): "+
		"chat 2 replicas on 4 nodes; a replica beyond them waits Pending")

	s := deploy(t, svc)
	s.Up()
	elastic := api.ElasticLeaderWorkerSetName(svc.Name, "chat")
	bound := watchBindings(t, svc.Namespace)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"autoscaling.keda.sh/paused-replicas":"%d"}}}`, 3)
	_, err := harness.Cluster.Dynamic.Resource(scaledObjects).Namespace(svc.Namespace).Patch(context.Background(), elastic,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	waitFor(t, 2*time.Minute, "KEDA holds the elastic LWS at 3 replicas, past maxReplicas", func() error {
		return lwsReplicas(t, svc.Namespace, elastic, 3)
	})
	waitFor(t, testcluster.NodeStartupTime+3*time.Minute, "Karpenter launches up to the limit: the base and one elastic replica run", func() error {
		if placed := placement(t, svc.Namespace, false); len(placed) != 2 {
			return fmt.Errorf("%d elastic pods placed", len(placed))
		}
		return nil
	})
	var statusOut string
	waitFor(t, 2*time.Minute, "fusioninfer status names the pool's limit", func() error {
		statusOut, code = harness.Status(t, svc)
		if !strings.Contains(statusOut, "NodePool/"+pool+": LimitReached") {
			return fmt.Errorf("no LimitReached in the status")
		}
		return nil
	})
	assert.Equal(t, 2, code, "not running yet")
	assert.Contains(t, statusOut, "Karpenter launches no node beyond the pool's limit of 32 nvidia.com/gpu: its nodes have 32, "+
		"and 4 pods wait for a node, asking for 32, 32 more than the limit leaves")
	assert.Contains(t, statusOut, "all available instance types exceed limits for nodepool")
	assert.Contains(t, statusOut, "raise replicas or autoscaling.maxReplicas in the spec")
	harness.RecordFixture(t, svc, "karpenter-limit-reached")

	time.Sleep(15 * time.Second) // Karpenter looks again at a provisionable pod every 10 s
	nodes := gpuNodes(t, pool)
	assert.Equal(t, int(limit.Nodes), len(nodes), "no node beyond the limit")
	assert.Equal(t, 2, len(placement(t, svc.Namespace, false)), "the replicas beyond the limit wait, none placed in part")
	bound.requireWhole(t)

	_, err = harness.Cluster.Dynamic.Resource(scaledObjects).Namespace(svc.Namespace).Patch(context.Background(), elastic,
		types.MergePatchType, []byte(`{"metadata":{"annotations":{"autoscaling.keda.sh/paused-replicas":null}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	s.Destroy()
}

// plan runs `fusioninfer plan` on the service's manifest.
func plan(t *testing.T, svc *api.InferenceService, args ...string) (string, int) {
	t.Helper()
	data, err := yaml.Marshal(svc)
	require.NoError(t, err)
	manifest := filepath.Join(t.TempDir(), svc.Name+".yaml")
	require.NoError(t, os.WriteFile(manifest, data, 0o600))
	out, err := exec.Command(testcli.Binary(t), append([]string{"plan", "-f", manifest}, args...)...).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !assert.ErrorAs(t, err, &exit) {
		t.FailNow()
	}
	t.Logf("fusioninfer plan:\n%s", out)
	if exit != nil {
		return string(out), exit.ExitCode()
	}
	return string(out), 0
}

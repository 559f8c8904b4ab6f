// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

var podGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

// status runs `fusioninfer status` on the service's manifest against the cluster.
func status(t *testing.T, svc *api.InferenceService, args ...string) (string, int) {
	t.Helper()
	return harness.Status(t, svc, args...)
}

// record writes the service's observed state as the diagnosis fixture name.
func record(t *testing.T, svc *api.InferenceService, name string) {
	t.Helper()
	harness.RecordFixture(t, svc, name)
}

// `fusioninfer status` on the real controllers: a gang that cannot fit is explained by its
// PodGroup and the GPUs it lacks; a server whose image cannot be pulled is named with the
// kubelet's message; a node pool whose NodeClaim Karpenter cannot launch is named with
// Karpenter's reason; a healthy service is Running with nothing to report.
func TestStatusExplainsWhatHoldsAServiceBack(t *testing.T) {
	t.Run("a gang that cannot fit", func(t *testing.T) {
		harness.AddGPUNodes(t, "status-gang", 5)
		namespace := "status-gang"
		harness.EnsureNamespace(t, namespace)
		svc := story4(t, namespace, api.AwaitNone)
		s := harness.NewStack(t, harness.ServicesProgram(svc))
		s.Up()
		require.Eventually(t, func() bool {
			pg, err := harness.Cluster.Dynamic.Resource(podGroups).Namespace(namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			ok, _, _ := harness.HasCondition(pg, "Unschedulable", "True")
			return ok
		}, 2*time.Minute, time.Second, "Volcano says the gang is unschedulable")
		out, code := status(t, svc)
		assert.Equal(t, 2, code, "not running yet")
		assert.Contains(t, out, "InferenceService deepseek-r1-disagg (namespace status-gang): not running yet")
		assert.Contains(t, out, "PodGroup/deepseek-r1-disagg: Unschedulable")
		assert.Contains(t, out, "the gang's minimal set needs 48 GPUs at once; the cluster's 5 ready GPU nodes have 40 free", "the GPU shortfall")
		assert.Contains(t, out, "each pod needs 8 free nvidia.com/gpu on one node (5 of the cluster's 5 ready nodes have that; 40 GPUs free in all)")
		assert.Contains(t, out, "the gang's minimal set needs 48 GPUs")
		record(t, svc, "gang-cannot-fit")

		out, code = status(t, svc, "-o", "json")
		assert.Equal(t, 2, code)
		var report diagnosis.Report
		require.NoError(t, json.Unmarshal([]byte(out), &report), out)
		assert.Equal(t, diagnosis.Pending, report.Phase)
		assert.Len(t, report.Roles, 2)
		s.Destroy()
	})
	t.Run("an image that cannot be pulled", func(t *testing.T) {
		harness.AddGPUNodes(t, "status-image", 1)
		namespace := "status-image"
		harness.EnsureNamespace(t, namespace)
		svc := storyOne(t, namespace)
		svc.Spec.Await = api.AwaitNone // a deployment that waited would time out: the server never starts
		svc.Spec.Roles[0].Template.Annotations = map[string]string{testcluster.ImagePullFailsAnnotation: "true"}
		svc.Spec.Roles[0].Template.Spec.Containers[0].Image = "vllm/vllm-openai:v0.33.0-typo"
		s := harness.NewStack(t, harness.ServicesProgram(svc))
		s.Up()
		var out string
		var code int
		require.Eventually(t, func() bool {
			out, code = status(t, svc)
			return code == 3
		}, time.Minute, 2*time.Second, "the status says failed")
		assert.Contains(t, out, "InferenceService qwen-inference (namespace status-image): failed")
		assert.Contains(t, out, `container vllm: Back-off pulling image "vllm/vllm-openai:v0.33.0-typo"`)
		assert.Contains(t, out, `fix: check the image "vllm/vllm-openai:v0.33.0-typo" and the pod's imagePullSecrets`)
		record(t, svc, "image-cannot-be-pulled")
		s.Destroy()
	})
	t.Run("a healthy service", func(t *testing.T) {
		harness.AddGPUNodes(t, "status-healthy", 1)
		namespace := "status-healthy"
		harness.EnsureNamespace(t, namespace)
		svc := storyOne(t, namespace)
		s := harness.NewStack(t, harness.ServicesProgram(svc))
		s.Up()
		out, code := status(t, svc)
		assert.Equal(t, 0, code)
		assert.True(t, strings.HasPrefix(out, "InferenceService qwen-inference (namespace status-healthy): Running\n"), out)
		assert.NotContains(t, out, "fix:")
		record(t, svc, "healthy")
		s.Destroy()
	})
	t.Run("a node Karpenter cannot launch", func(t *testing.T) {
		namespace := "status-karpenter"
		harness.EnsureNamespace(t, namespace)
		svc := storyOne(t, namespace)
		svc.Spec.Await = api.AwaitNone // no node ever comes for the pool
		svc.Spec.NodePools = []api.NodePool{{Name: "l4", GPUsPerNode: 1,
			NodeClassRef: &api.NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "gpu"}}}
		svc.Spec.Roles[0].NodePool = "l4"
		s := harness.NewStack(t, harness.ServicesProgram(svc))
		s.Up()
		// What Karpenter makes for the pending pod when the cloud has no capacity (no Karpenter here).
		pool := api.KarpenterNodePoolName(svc.Name, "l4")
		claim := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
			"metadata": map[string]any{"name": pool + "-x7k2p", "labels": map[string]any{"karpenter.sh/nodepool": pool}},
			"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
				"requirements": []any{map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}}},
			},
		}}
		nodeClaims := schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
		ctx := context.Background()
		created, err := harness.Cluster.Dynamic.Resource(nodeClaims).Create(ctx, claim, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = harness.Cluster.Dynamic.Resource(nodeClaims).Delete(ctx, claim.GetName(), metav1.DeleteOptions{})
		})
		require.NoError(t, unstructured.SetNestedSlice(created.Object, []any{map[string]any{
			"type": "Launched", "status": "False", "reason": "InsufficientCapacityError", "lastTransitionTime": "2026-11-23T00:00:00Z",
			"message": "all requested instance types were unavailable during launch",
		}}, "status", "conditions"))
		_, err = harness.Cluster.Dynamic.Resource(nodeClaims).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
		var out string
		var code int
		require.Eventually(t, func() bool {
			out, code = status(t, svc)
			return strings.Contains(out, "fix: Karpenter launches the nodes of NodePool "+pool+": wait for them, or see its NodeClaims")
		}, time.Minute, 2*time.Second, "the pending pod points at the pool's NodeClaims")
		assert.Equal(t, 2, code, "not running yet")
		assert.Contains(t, out, "NodeClaim/"+pool+"-x7k2p: InsufficientCapacityError: pool "+pool+
			": Karpenter cannot launch its node: all requested instance types were unavailable during launch")
		s.Destroy()
	})
	t.Run("a service that does not exist", func(t *testing.T) {
		svc := storyOne(t, "status-nowhere")
		out, code := status(t, svc)
		assert.Equal(t, 1, code)
		assert.Equal(t, `fusioninfer: no InferenceService "qwen-inference" in namespace "status-nowhere": nothing there carries the label `+
			"fusioninfer.io/service=qwen-inference (deploy it, or give the right --namespace) (see 'fusioninfer status --help')\n", out)
	})
}

// storyOne is story 1 (one single-GPU replica of Qwen3-8B) in namespace.
func storyOne(t *testing.T, namespace string) *api.InferenceService {
	t.Helper()
	svc := harness.ManifestServices(t, filepath.Join(testcluster.RepositoryRoot(), "examples", "manifests", "story1-monolithic.yaml"))[0]
	svc.Namespace = namespace
	return svc
}

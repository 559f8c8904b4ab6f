//go:build e2e

// Package karpenter proves the node pools a service renders on a real Karpenter (v1.8.0, its kwok
// cloud provider launching kwok nodes of GPU instance types), with the real LWS controller and
// Volcano: from no GPU node at all, `pulumi up` ends Running on nodes Karpenter launched from the
// service's own NodePools, and `pulumi destroy` leaves Karpenter to remove them.
package karpenter

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/components/mirror"
	"github.com/fusioninfer/pulumi-fusioninfer/components/topology"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.MainWithKarpenter(m) }

var nodeClaims = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// TestKarpenterLaunchesTheDisaggregatedMultiNodeStoryFromZero: story 4 (2 prefill replicas of 2
// nodes, 3 decode replicas of 4 nodes, 8 GPUs a pod) on one karpenter pool of 8-GPU nodes, on a
// cluster with no GPU node: `pulumi up` ends Running with exactly the 16 nodes the replicas need,
// every one launched by Karpenter for a NodeClaim of the service's NodePool and of the pool's
// instance type and capacity type; after `pulumi destroy` Karpenter removes them all.
func TestKarpenterLaunchesTheDisaggregatedMultiNodeStoryFromZero(t *testing.T) {
	const namespace = "karpenter-story4"
	harness.EnsureNamespace(t, namespace)
	require.Empty(t, gpuNodes(t, ""), "the test starts with no GPU node")

	image := "vllm/vllm-openai:v0.11.0"
	s := harness.NewStack(t, harness.ComponentProgram("story", func() *inferenceservice.Args {
		return &inferenceservice.Args{Namespace: namespace,
			NodePools: []api.NodePool{{Name: "h100", GPUsPerNode: 8, InstanceTypes: []string{"gpu-8x-h100"}, CapacityTypes: []string{"on-demand"},
				NodeClassRef: &api.NodeClassRef{Group: testcluster.KWOKNodeClass.Group, Kind: testcluster.KWOKNodeClass.Kind, Name: testcluster.KWOKNodeClass.Name}}},
			Roles: []inferenceservice.RoleArgs{{
				Name: "prefill", ComponentType: "prefiller", Replicas: ptr.To(2), Multinode: &api.Multinode{NodeCount: 2}, NodePool: "h100",
				Template: harness.Server(image, time.Second, "--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"),
			}, {
				Name: "decode", ComponentType: "decoder", Replicas: ptr.To(3), Multinode: &api.Multinode{NodeCount: 4}, NodePool: "h100",
				Template: harness.Server(image, time.Second, "--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "4"),
			}}}
	}))
	bound := watchBindings(t, namespace)
	start := time.Now()
	s.Up()
	tookFromZero := time.Since(start)
	// Volcano binds a gang's pods in one scheduling session (every second): a replica whose pods
	// were bound further apart was placed in parts while its nodes arrived.
	for replica, times := range bound.byReplica() {
		spread := times[len(times)-1].Sub(times[0])
		require.Less(t, spread, time.Second, "replica %s was placed in parts, %s apart", replica, spread)
	}
	pool := api.KarpenterNodePoolName("story", "h100")
	nodes := gpuNodes(t, pool)
	require.Len(t, nodes, 2*2+3*4, "one node a pod: 2 prefill replicas of 2 pods, 3 decode replicas of 4")
	for _, node := range nodes {
		require.True(t, strings.HasPrefix(node.Spec.ProviderID, "kwok://"), "%s was not launched by Karpenter", node.Name)
		require.Equal(t, "gpu-8x-h100", node.Labels[corev1.LabelInstanceTypeStable], node.Name)
		require.Equal(t, mirror.CapacityTypeOnDemand, node.Labels[mirror.CapacityTypeLabelKey], node.Name)
	}
	claims, err := harness.Cluster.Dynamic.Resource(nodeClaims).List(context.Background(),
		metav1.ListOptions{LabelSelector: mirror.NodePoolLabelKey + "=" + pool})
	require.NoError(t, err)
	require.Len(t, claims.Items, len(nodes), "a NodeClaim for each node")
	for role, count := range map[string]int{"prefill": 4, "decode": 12} {
		pods, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: topology.LabelRoleName + "=" + role})
		require.NoError(t, err)
		require.Len(t, pods.Items, count, role)
		for _, pod := range pods.Items {
			require.NotEmpty(t, pod.Spec.NodeName, "%s is not placed", pod.Name)
		}
	}
	t.Logf("from zero GPU nodes to Running: %s", tookFromZero.Round(time.Second))

	s.Destroy()
	waitFor(t, 3*time.Minute, "Karpenter removes the pool's nodes after destroy", func() error {
		if left := gpuNodes(t, pool); len(left) > 0 {
			return fmt.Errorf("%d nodes left", len(left))
		}
		return nil
	})
}

// gpuNodes are the nodes with GPUs, of the Karpenter NodePool pool if it is not empty.
func gpuNodes(t *testing.T, pool string) []corev1.Node {
	t.Helper()
	opts := metav1.ListOptions{}
	if pool != "" {
		opts.LabelSelector = mirror.NodePoolLabelKey + "=" + pool
	}
	list, err := harness.Cluster.Clientset.CoreV1().Nodes().List(context.Background(), opts)
	require.NoError(t, err)
	var out []corev1.Node
	for _, node := range list.Items {
		if gpus := node.Status.Allocatable["nvidia.com/gpu"]; !gpus.IsZero() && node.DeletionTimestamp == nil {
			out = append(out, node)
		}
	}
	return out
}

func waitFor(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	require.NoError(t, testcluster.WaitFor(timeout, check), what)
}

// bindings are the times the pods of a namespace were first seen on a node, by replica (the
// pod's LWS and group index).
type bindings struct {
	mu    sync.Mutex
	times map[string][]time.Time
	seen  map[string]bool
}

// watchBindings records the namespace's bindings until the test ends.
func watchBindings(t *testing.T, namespace string) *bindings {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	b := &bindings{times: map[string][]time.Time{}, seen: map[string]bool{}}
	go func() {
		for e := range w.ResultChan() {
			pod, ok := e.Object.(*corev1.Pod)
			if !ok || pod.Spec.NodeName == "" {
				continue
			}
			b.mu.Lock()
			if !b.seen[pod.Name] {
				b.seen[pod.Name] = true
				replica := pod.Labels[lwsv1.SetNameLabelKey] + "/" + pod.Labels[lwsv1.GroupIndexLabelKey]
				b.times[replica] = append(b.times[replica], time.Now())
			}
			b.mu.Unlock()
		}
	}()
	return b
}

// byReplica are the binding times of each replica, in order.
func (b *bindings) byReplica() map[string][]time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]time.Time{}
	for replica, times := range b.times {
		out[replica] = append([]time.Time(nil), times...)
	}
	return out
}

// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package karpenter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// disruptedTaint is the taint Karpenter puts on a node it is taking away
// (karpenter pkg/apis/v1/taints.go, DisruptedNoScheduleTaint).
const disruptedTaint = "karpenter.sh/disrupted"

// autoscaled is a service name (in a namespace of that name) of one worker role of 2 pods of 8
// GPUs a replica on a karpenter pool "h100" of 8-GPU nodes whose empty nodes go after
// consolidateAfter: base minReplicas, at most maxReplicas, on vllm:num_requests_waiting with a
// target of 4, from the Prometheus at prometheusURL.
func autoscaled(t *testing.T, name, prometheusURL string, minReplicas, maxReplicas int, consolidateAfter string) *api.InferenceService {
	t.Helper()
	return service(t, fmt.Sprintf(`
metadata: {name: %[1]s, namespace: %[1]s}
spec:
  monitoring: {prometheusAddress: %[2]q}
  nodePools: [{name: h100, gpusPerNode: 8, instanceTypes: [gpu-8x-h100], nodeClassRef: %[3]s, consolidateAfter: %[4]s}]
  roles:
    - name: chat
      componentType: worker
      nodePool: h100
      multinode: {nodeCount: 2}
      autoscaling: {minReplicas: %[5]d, maxReplicas: %[6]d, metric: "vllm:num_requests_waiting", target: 4, scaleDownDelay: 20s}
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: ["--model", "Qwen/Qwen3-235B-A22B", "--tensor-parallel-size", "16"]
              resources: {limits: {nvidia.com/gpu: "8"}}
`, name, prometheusURL, kwokClassYAML, consolidateAfter, minReplicas, maxReplicas))
}

// waiting is the waiting-requests series of a pod of namespace.
func waiting(namespace, pod string) map[string]string {
	return map[string]string{"__name__": api.MetricRequestsWaiting, "namespace": namespace, "pod": pod}
}

// TestKarpenterLaunchesAndConsolidatesAnAutoscaledRolesNodes: KEDA asks for 2 elastic replicas
// (12 requests waiting at 4 a replica), Karpenter launches their 4 nodes and each replica runs
// whole; with the load gone the elastic replicas go and Karpenter removes their 4 nodes after the
// pool's consolidateAfter, never more at once than the pool's disruption budget (10% of its
// nodes, rounded up: one), and never a node under the base replica, whose pods never move.
func TestKarpenterLaunchesAndConsolidatesAnAutoscaledRolesNodes(t *testing.T) {
	prometheus := harness.NewPrometheus(t)
	svc := autoscaled(t, "karpenter-scale", prometheus.URL, 1, 3, "30s")
	harness.EnsureNamespace(t, svc.Namespace)
	pool := api.KarpenterNodePoolName(svc.Name, "h100")
	elastic := api.ElasticLeaderWorkerSetName(svc.Name, "chat")
	s := deploy(t, svc)
	s.Up()
	base := placement(t, svc.Namespace, true)
	require.Len(t, base, 2, "the base replica's 2 pods")
	baseNodes := map[string]bool{}
	for _, node := range base {
		baseNodes[node] = true
	}
	require.Equal(t, 2, len(gpuNodes(t, pool)), "Karpenter launched the base replica's nodes")

	bound := watchBindings(t, svc.Namespace)
	prometheus.Set(t, waiting(svc.Namespace, svc.Name+"-chat-0-0"), 12)
	waitFor(t, 4*time.Minute, "KEDA asks for 2 elastic replicas", func() error { return lwsReplicas(t, svc.Namespace, elastic, 2) })
	waitFor(t, testcluster.NodeStartupTime+3*time.Minute, "Karpenter launches the elastic replicas' 4 nodes and they run", func() error {
		if placed := placement(t, svc.Namespace, false); len(placed) != 4 {
			return fmt.Errorf("%d of 4 elastic pods placed", len(placed))
		}
		return nil
	})
	bound.requireWhole(t)
	require.Equal(t, 6, len(gpuNodes(t, pool)), "a node for each pod")
	require.Equal(t, 6, len(nodeClaims(t, pool)), "each launched by Karpenter for the pool")
	assert.Equal(t, base, placement(t, svc.Namespace, true), "the base replica never moved")

	// Load gone: the elastic replicas go after the scale-down delay, then their nodes.
	disruptions := watchDisruptions(t, pool)
	prometheus.Set(t, waiting(svc.Namespace, svc.Name+"-chat-0-0"), 0)
	waitFor(t, 4*time.Minute, "KEDA removes the elastic replicas", func() error { return lwsReplicas(t, svc.Namespace, elastic, 0) })
	emptied := time.Now()
	waitFor(t, 5*time.Minute, "Karpenter removes the 4 emptied nodes, and only those", func() error {
		left := gpuNodes(t, pool)
		if len(left) != 2 {
			return fmt.Errorf("%d nodes of the pool left", len(left))
		}
		for _, node := range left {
			if !baseNodes[node.Name] {
				return fmt.Errorf("node %s is left, not the base replica's", node.Name)
			}
		}
		return nil
	})
	took := time.Since(emptied)
	most, touched := disruptions.end()
	assert.Equal(t, 1, most, "Karpenter takes away at most the budget's 10% of the pool's nodes at once (one)")
	for node := range touched {
		assert.False(t, baseNodes[node], "Karpenter never disrupts %s, under the base replica", node)
	}
	assert.Equal(t, 4, len(touched), "the 4 elastic nodes went")
	assert.Equal(t, base, placement(t, svc.Namespace, true), "the base replica never moved")
	testcluster.Progress("Karpenter removed the 4 empty nodes %s after the elastic replicas went (consolidateAfter 30s)", took.Round(time.Second))
	s.Destroy()
}

// placement maps the pods of the base replicas (base) or of the elastic LWS (not base) that are on
// a node to their node, by pod name and UID.
func placement(t *testing.T, namespace string, base bool) map[string]string {
	t.Helper()
	pods, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, pod := range pods.Items {
		_, isBase := pod.Labels[render.LabelReplicaIndex]
		if isBase != base || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
			continue
		}
		out[pod.Name+"/"+string(pod.UID)] = pod.Spec.NodeName
	}
	return out
}

// lwsReplicas is nil when the LWS asks for want replicas.
func lwsReplicas(t *testing.T, namespace, name string, want int64) error {
	lws, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got, _, _ := unstructured.NestedInt64(lws.Object, "spec", "replicas"); got != want {
		return fmt.Errorf("%s asks for %d replicas", name, got)
	}
	return nil
}

// disruptionWatch records, from a watch on the nodes, how many nodes of a pool Karpenter was
// taking away at once (tainted karpenter.sh/disrupted, or deleted, until gone) and which.
type disruptionWatch struct {
	mu      sync.Mutex
	now     map[string]bool
	most    int
	touched map[string]bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func watchDisruptions(t *testing.T, pool string) *disruptionWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := harness.Cluster.Clientset.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + pool})
	require.NoError(t, err)
	d := &disruptionWatch{now: map[string]bool{}, touched: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		for e := range w.ResultChan() {
			node, ok := e.Object.(*corev1.Node)
			if !ok {
				continue
			}
			d.mu.Lock()
			disrupted := node.DeletionTimestamp != nil
			for _, taint := range node.Spec.Taints {
				disrupted = disrupted || taint.Key == disruptedTaint
			}
			switch {
			case e.Type == "DELETED":
				delete(d.now, node.Name)
				d.touched[node.Name] = true
			case disrupted:
				d.now[node.Name] = true
				d.touched[node.Name] = true
			}
			d.most = max(d.most, len(d.now))
			d.mu.Unlock()
		}
	}()
	return d
}

// end stops the watch and returns the most nodes taken away at once and every node touched.
func (d *disruptionWatch) end() (int, map[string]bool) {
	d.cancel()
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.most, d.touched
}

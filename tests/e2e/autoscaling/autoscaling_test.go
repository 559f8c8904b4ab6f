// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// Package autoscaling proves autoscaling (docs/design/0014-autoscaling.md) on the simulated
// cluster with KEDA's real operator and metrics server, kube-controller-manager's HPA controller,
// the LWS controller and Volcano: a driven metric moves a multi-node decode role 2 -> 5 -> 2
// replicas and its prefill role with it, each elastic replica placed whole or not at all, the base
// replicas never moved.
package autoscaling

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.MainWithKEDA(m) }

const (
	namespace      = "autoscaling"
	decodeElastic  = "chat-decode-elastic"
	prefillElastic = "chat-prefill-elastic"
)

var scaledObjects = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// TestMultiNodeDecodeScales2To5To2: a prefill/decode service whose decode role has 2 pods a
// replica, base 2, at most 5, on waiting requests with a target of 4 a replica; prefill (1 pod a
// replica, base 1, at most 3) follows decode at a ratio of 0.5.
func TestMultiNodeDecodeScales2To5To2(t *testing.T) {
	harness.EnsureNamespace(t, namespace)
	prometheus := harness.NewPrometheus(t)
	// 11 nodes of 8 GPUs: the base (prefill 1 node, decode 2 x 2 nodes) leaves 6 nodes for the 8
	// the elastic replicas (prefill 2 x 1, decode 3 x 2) want: some must wait, each whole.
	harness.AddGPUNodes(t, "as", 11)
	image := "vllm/vllm-openai:v0.33.0"
	s := harness.NewStack(t, harness.ComponentProgram("chat", func() *inferenceservice.Args {
		return &inferenceservice.Args{Namespace: namespace, Monitoring: &api.Monitoring{PrometheusAddress: prometheus.URL},
			Roles: []inferenceservice.RoleArgs{{
				Name: "prefill", ComponentType: "prefiller", Replicas: ptr.To(1),
				Autoscaling: &api.Autoscaling{MaxReplicas: 3, Follow: &api.AutoscalingFollow{Role: "decode", Ratio: 0.5}, ScaleDownDelay: "45s"},
				Template:    harness.Server(image, time.Second, "--model", "Qwen/Qwen3-8B"),
			}, {
				Name: "decode", ComponentType: "decoder", Multinode: &api.Multinode{NodeCount: 2},
				Autoscaling: &api.Autoscaling{MinReplicas: ptr.To(2), MaxReplicas: 5, Metric: api.MetricRequestsWaiting, Target: 4, ScaleDownDelay: "45s"},
				Template:    harness.Server(image, time.Second, "--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "16"),
			}}}
	}))
	s.Up()
	require.Equal(t, int64(0), elasticReplicas(t, decodeElastic), "the elastic LWS is created with no replica")
	base := basePods(t)
	require.Len(t, base, 5, "prefill 1 pod, decode 2 replicas of 2 pods")
	waitFor(t, "KEDA has made the ScaledObjects' HPAs", func(t *testing.T) error {
		return errors.Join(scaledObjectReady(t, decodeElastic), scaledObjectReady(t, prefillElastic))
	})

	// Load: 10 requests waiting on each decode leader, and a decode worker pod's series that must
	// not count (workers join the leader's Ray cluster; they serve nothing). 20 waiting at 4 a
	// replica is 5 decode replicas (3 elastic), and at a ratio of 0.5, 3 prefill replicas (2 elastic).
	for _, pod := range []string{"chat-decode-0-0", "chat-decode-1-0"} {
		prometheus.Set(t, waiting(pod), 10)
	}
	prometheus.Set(t, waiting("chat-decode-0-0-1"), 1000)
	waitFor(t, "KEDA asks for 3 elastic decode and 2 elastic prefill replicas", func(t *testing.T) error {
		return errors.Join(replicasAre(t, decodeElastic, 3), replicasAre(t, prefillElastic, 2))
	})
	waitFor(t, "the 6 free nodes are taken by whole replicas", func(t *testing.T) error {
		if n := placedPods(t, decodeElastic) + placedPods(t, prefillElastic); n != 6 {
			return fmt.Errorf("%d elastic pods placed", n)
		}
		return nil
	})
	time.Sleep(10 * time.Second) // Volcano's sessions run every second: a partial placement would show
	for group, placed := range elasticPlacement(t, decodeElastic) {
		assert.Contains(t, []int{0, 2}, placed, "decode elastic replica %d (2 pods) is placed whole or not at all", group)
	}
	harness.AddGPUNodes(t, "as-more", 2)
	waitFor(t, "every elastic replica runs whole once 2 nodes are added", func(t *testing.T) error {
		return errors.Join(groupsRunning(t, decodeElastic, 3, 2), groupsRunning(t, prefillElastic, 2, 1))
	})
	assert.Equal(t, base, basePods(t), "the base replicas never moved")
	assert.Contains(t, prometheus.Queries(), `clamp_min((sum(vllm:num_requests_waiting{namespace="autoscaling",pod=~"chat-decode-([0-9]+|elastic)-[0-9]+"})) - 8, 0)`,
		"KEDA asked for the decode ScaledObject's query")

	assert.Empty(t, s.Up(), "a deployment after the autoscaler moved changes nothing")
	s.UpRefresh()
	status := s.Outputs("chat")["status"].ObjectValue()
	for role, want := range map[string]float64{"decode": 5, "prefill": 3} {
		assert.Equal(t, want, status[resource.PropertyKey(role)].ObjectValue()["desiredReplicas"].NumberValue(), "%s counts its elastic replicas", role)
		assert.Equal(t, want, status[resource.PropertyKey(role)].ObjectValue()["readyReplicas"].NumberValue(), role)
	}

	// A new template rolls the base replicas in their batches and the elastic LWSs after them,
	// without resetting the autoscaler's counts.
	image = "vllm/vllm-openai:v0.33.1"
	s.Up()
	assert.Equal(t, int64(3), elasticReplicas(t, decodeElastic), "the rollout kept the autoscaler's replica count")
	assert.Equal(t, int64(2), elasticReplicas(t, prefillElastic), "the rollout kept the autoscaler's replica count")
	watch := harness.WatchLeaderWorkerSets(t, namespace)
	watch.EndWhenRolled(t, namespace, "chat", image)
	base = basePods(t)

	// Load gone: after the scale-down delay the elastic replicas go, the base stays. KEDA counts
	// the delay from its last poll that saw load (every 30 s), so they go between 15 and 45 s later.
	for _, pod := range []string{"chat-decode-0-0", "chat-decode-1-0", "chat-decode-0-0-1"} {
		prometheus.Set(t, waiting(pod), 0)
	}
	dropped := time.Now()
	time.Sleep(10 * time.Second)
	assert.Equal(t, int64(3), elasticReplicas(t, decodeElastic), "the elastic replicas stay while the load has been low for less than the delay")
	waitFor(t, "the elastic replicas go after the delay", func(t *testing.T) error {
		for _, lws := range []string{decodeElastic, prefillElastic} {
			if err := replicasAre(t, lws, 0); err != nil {
				return err
			}
			if n := len(elasticPlacement(t, lws)); n > 0 {
				return fmt.Errorf("%d groups of %s still have pods", n, lws)
			}
		}
		return nil
	})
	testcluster.Progress("the elastic replicas went %s after the load", time.Since(dropped).Round(time.Second))
	assert.Equal(t, base, basePods(t), "the base replicas never moved")
	s.Destroy()
}

func waiting(pod string) map[string]string {
	return map[string]string{"__name__": api.MetricRequestsWaiting, "namespace": namespace, "pod": pod}
}

// waitFor polls check for up to 4 minutes: KEDA polls every 30 s, the HPA every 5 s.
func waitFor(t *testing.T, what string, check func(t *testing.T) error) {
	t.Helper()
	var last error
	require.Eventually(t, func() bool { last = check(t); return last == nil }, 4*time.Minute, time.Second,
		"%s: %v", what, func() error { return last }())
	testcluster.Progress("%s", what)
}

func elasticReplicas(t *testing.T, name string) int64 {
	t.Helper()
	lws, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	n, _, _ := unstructured.NestedInt64(lws.Object, "spec", "replicas")
	return n
}

func replicasAre(t *testing.T, name string, want int64) error {
	if got := elasticReplicas(t, name); got != want {
		return fmt.Errorf("%s has %d replicas", name, got)
	}
	return nil
}

func scaledObjectReady(t *testing.T, name string) error {
	so, err := harness.Cluster.Dynamic.Resource(scaledObjects).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if ok, why, _ := harness.HasCondition(so, "Ready", "True"); !ok {
		return fmt.Errorf("%s", why)
	}
	return nil
}

// basePods are the base replicas' pods, by name, with their UIDs.
func basePods(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pod := range pods(t) {
		if _, ok := pod.Labels[render.LabelReplicaIndex]; ok {
			out[pod.Name] = string(pod.UID)
		}
	}
	return out
}

// elasticPlacement is, per group of the elastic LWS with pods, how many of them are on a node.
func elasticPlacement(t *testing.T, name string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, pod := range pods(t) {
		if pod.Labels[lwsv1.SetNameLabelKey] != name {
			continue
		}
		var group int
		_, _ = fmt.Sscan(pod.Labels[lwsv1.GroupIndexLabelKey], &group)
		out[group] += 0
		if pod.Spec.NodeName != "" {
			out[group]++
		}
	}
	return out
}

// placedPods counts the elastic LWS's pods on a node.
func placedPods(t *testing.T, name string) int {
	n := 0
	for _, placed := range elasticPlacement(t, name) {
		n += placed
	}
	return n
}

// groupsRunning: the elastic LWS has n groups of size pods, every one Ready on a node.
func groupsRunning(t *testing.T, name string, n, size int) error {
	ready := map[int]int{}
	for _, pod := range pods(t) {
		if pod.Labels[lwsv1.SetNameLabelKey] != name || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				var group int
				_, _ = fmt.Sscan(pod.Labels[lwsv1.GroupIndexLabelKey], &group)
				ready[group]++
			}
		}
	}
	for g := 0; g < n; g++ {
		if ready[g] != size {
			return fmt.Errorf("%s group %d has %d of %d pods ready (%v)", name, g, ready[g], size, ready)
		}
	}
	return nil
}

func pods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: render.LabelService + "=chat"})
	require.NoError(t, err)
	return list.Items
}

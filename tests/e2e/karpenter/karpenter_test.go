// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// Package karpenter proves the node pools a service renders on a real Karpenter (v1.8.0, its kwok
// cloud provider launching kwok nodes of GPU instance types that take testcluster.NodeStartupTime
// to start), with the real LWS controller, Volcano and KEDA, on a cluster of its own: from no GPU
// node at all `pulumi up` ends Running on nodes Karpenter launched from the service's own
// NodePools and `pulumi destroy` leaves Karpenter to remove them; an autoscaled role's elastic
// replicas get their nodes and give them back; the pool's limit stops a runaway; `fusioninfer
// status` names what Karpenter cannot launch and the nodes Volcano holds that Karpenter counts as
// free (docs/scheduling.md).
package karpenter

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/planner"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	mirrorkarpenter "github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.MainWithKarpenter(m) }

var (
	nodeClaimsResource = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	nodePoolsResource  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
)

// kwokClass is the node class of every pool of these tests; kwokClassYAML the same in a manifest.
var (
	kwokClass     = &api.NodeClassRef{Group: testcluster.KWOKNodeClass.Group, Kind: testcluster.KWOKNodeClass.Kind, Name: testcluster.KWOKNodeClass.Name}
	kwokClassYAML = fmt.Sprintf("{group: %s, kind: %s, name: %s}", kwokClass.Group, kwokClass.Kind, kwokClass.Name)
)

// service is the one InferenceService of a manifest (its apiVersion and kind added), with the
// defaults the CLI gives it.
func service(t *testing.T, manifest string) *api.InferenceService {
	t.Helper()
	docs, errs := api.Decode([]byte("apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\n" + strings.TrimLeft(manifest, "\n")))
	require.Empty(t, errs)
	require.Len(t, docs, 1)
	return render.WithDefaults(docs[0].Service)
}

// story4 is the disaggregated multi-node story (2 prefill replicas of 2 nodes, 3 decode replicas
// of 4 nodes, 8 GPUs a pod), named name in a namespace of that name, on one karpenter pool "h100"
// of 8-GPU on-demand nodes of the shape gpu-8x-h100.
func story4(t *testing.T, name string) *api.InferenceService {
	t.Helper()
	services := harness.ManifestServices(t, filepath.Join(testcluster.RepositoryRoot(), "examples", "manifests", "story4-disaggregated-multinode.yaml"))
	svc := services[0]
	svc.Name, svc.Namespace = name, name
	svc.Spec.NodePools = []api.NodePool{{Name: "h100", GPUsPerNode: 8, InstanceTypes: []string{"gpu-8x-h100"},
		CapacityTypes: []api.CapacityType{"on-demand"}, NodeClassRef: kwokClass}}
	for i := range svc.Spec.Roles {
		svc.Spec.Roles[i].NodePool = "h100"
	}
	svc.Spec.Roles[0].Replicas, svc.Spec.Roles[1].Replicas = ptr.To(2), ptr.To(3)
	return svc
}

// TestKarpenterLaunchesTheDisaggregatedMultiNodeStoryFromZero: story 4 on a cluster with no GPU
// node: `pulumi up` ends Running with exactly the nodes `fusioninfer plan` says the service needs,
// every one launched by Karpenter for a NodeClaim of the service's NodePool, of the pool's
// instance type and capacity type, each replica bound whole; Karpenter saw every pod before the
// first of its nodes started (what keeps it and Volcano from waiting on each other:
// docs/scheduling.md); after `pulumi destroy` Karpenter removes the nodes.
func TestKarpenterLaunchesTheDisaggregatedMultiNodeStoryFromZero(t *testing.T) {
	svc := story4(t, "karpenter-cold")
	harness.EnsureNamespace(t, svc.Namespace)
	waitFor(t, 3*time.Minute, "the test starts with no GPU node (Karpenter removes those of the tests before)", func() error {
		if n := len(gpuNodes(t, "")); n > 0 {
			return fmt.Errorf("%d GPU nodes", n)
		}
		return nil
	})
	s := deploy(t, svc)
	bound := watchBindings(t, svc.Namespace)
	start := time.Now()
	s.Up()
	tookFromZero := time.Since(start)
	bound.requireWhole(t)

	pool := api.KarpenterNodePoolName(svc.Name, "h100")
	nodes := gpuNodes(t, pool)
	require.Equal(t, plannedNodes(t, svc), len(nodes), "as many nodes as fusioninfer plan places the service on")
	require.Equal(t, 2*2+3*4, len(nodes), "one node a pod: 2 prefill replicas of 2 pods, 3 decode replicas of 4")
	for _, node := range nodes {
		require.True(t, strings.HasPrefix(node.Spec.ProviderID, "kwok://"), "%s was not launched by Karpenter", node.Name)
		require.Equal(t, "gpu-8x-h100", node.Labels[corev1.LabelInstanceTypeStable], node.Name)
		require.Equal(t, mirrorkarpenter.CapacityTypeOnDemand, node.Labels[mirrorkarpenter.CapacityTypeLabelKey], node.Name)
	}
	claims := nodeClaims(t, pool)
	require.Equal(t, len(nodes), len(claims), "a NodeClaim for each node")
	firstNode := nodes[0].CreationTimestamp
	for _, node := range nodes {
		if node.CreationTimestamp.Before(&firstNode) {
			firstNode = node.CreationTimestamp
		}
	}
	for _, claim := range claims {
		require.False(t, firstNode.Before(&claim.CreationTimestamp),
			"Karpenter counted every pod before a node of the pool could take one: NodeClaim %s made at %s, the first node at %s",
			claim.Name, claim.CreationTimestamp, firstNode)
	}
	requireAllPlaced(t, svc.Namespace, map[string]int{"prefill": 4, "decode": 12})
	t.Logf("story 4 from zero GPU nodes to Running: %s (nodes start in %s)", tookFromZero.Round(100*time.Millisecond), testcluster.NodeStartupTime)

	s.Destroy()
	_, err := harness.Cluster.Dynamic.Resource(nodePoolsResource).Get(context.Background(), pool, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "pulumi destroy removed the NodePool %s: %v", pool, err)
	waitFor(t, 3*time.Minute, "Karpenter removes the pool's nodes after destroy", func() error {
		if left := gpuNodes(t, pool); len(left) > 0 {
			return fmt.Errorf("%d nodes left", len(left))
		}
		return nil
	})
}

// TestKarpenterStoryOnNodesAlreadyThere: the same service on the pool's nodes already there (as
// Karpenter would have left them), for the figure to set beside the launch from zero.
func TestKarpenterStoryOnNodesAlreadyThere(t *testing.T) {
	svc := story4(t, "karpenter-warm")
	harness.EnsureNamespace(t, svc.Namespace)
	harness.PreparePlatform(t, svc)
	s := deploy(t, svc)
	start := time.Now()
	s.Up()
	took := time.Since(start)
	requireAllPlaced(t, svc.Namespace, map[string]int{"prefill": 4, "decode": 12})
	t.Logf("story 4 on nodes already there to Running: %s", took.Round(100*time.Millisecond))
	s.Destroy()
}

// deploy is a stack of the service, destroyed when the test ends if it failed before destroying
// it, so that Karpenter removes its nodes before the next test.
func deploy(t *testing.T, svc *api.InferenceService) *harness.Stack {
	t.Helper()
	s := harness.NewStack(t, harness.ServicesProgram(svc))
	t.Cleanup(func() {
		if t.Failed() {
			s.Destroy()
		}
	})
	return s
}

// plannedNodes is how many nodes `fusioninfer plan`'s prediction places the whole service on,
// on a cluster of the pool's nodes larger than it needs.
func plannedNodes(t *testing.T, svc *api.InferenceService) int {
	t.Helper()
	p, err := planner.Predict(svc, planner.Uniform(64, int64(svc.Spec.NodePools[0].GPUsPerNode)))
	require.NoError(t, err)
	require.Equal(t, planner.Full, p.Status)
	used := map[string]bool{}
	for _, r := range p.Replicas {
		for _, n := range r.Nodes {
			used[n] = true
		}
	}
	return len(used)
}

// requireAllPlaced requires each role's pods, as many as given, all bound to a node.
func requireAllPlaced(t *testing.T, namespace string, podsByRole map[string]int) {
	t.Helper()
	for role, count := range podsByRole {
		pods, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: render.LabelRoleName + "=" + role})
		require.NoError(t, err)
		require.Len(t, pods.Items, count, role)
		for _, pod := range pods.Items {
			require.NotEmpty(t, pod.Spec.NodeName, "%s is not placed", pod.Name)
		}
	}
}

// gpuNodes are the nodes with GPUs not being deleted, of the Karpenter NodePool pool if it is not
// empty, by name.
func gpuNodes(t *testing.T, pool string) []corev1.Node {
	t.Helper()
	opts := metav1.ListOptions{}
	if pool != "" {
		opts.LabelSelector = mirrorkarpenter.NodePoolLabelKey + "=" + pool
	}
	list, err := harness.Cluster.Clientset.CoreV1().Nodes().List(context.Background(), opts)
	require.NoError(t, err)
	var out []corev1.Node
	for _, node := range list.Items {
		if gpus := node.Status.Allocatable["nvidia.com/gpu"]; !gpus.IsZero() && node.DeletionTimestamp == nil {
			out = append(out, node)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nodeClaims are the NodeClaims of the NodePool pool not being deleted, read into the mirror
// status reads.
func nodeClaims(t *testing.T, pool string) []mirrorkarpenter.NodeClaim {
	t.Helper()
	list, err := harness.Cluster.Dynamic.Resource(nodeClaimsResource).List(context.Background(),
		metav1.ListOptions{LabelSelector: mirrorkarpenter.NodePoolLabelKey + "=" + pool})
	require.NoError(t, err)
	var out []mirrorkarpenter.NodeClaim
	for _, item := range list.Items {
		var claim mirrorkarpenter.NodeClaim
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &claim))
		if claim.DeletionTimestamp == nil {
			out = append(out, claim)
		}
	}
	return out
}

func waitFor(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	require.NoError(t, testcluster.WaitFor(timeout, check), what)
	testcluster.Progress("%s", what)
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

// requireWhole requires every replica's pods bound together, within one Volcano session (every
// second) and the time its binding calls take to reach the watch on a loaded 2-core machine: 5 s.
// A replica placed in parts would bind the rest only once further nodes start (NodeStartupTime
// after Karpenter's next batch), further apart than that.
func (b *bindings) requireWhole(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NotEmpty(t, b.times, "pods were bound")
	for replica, times := range b.times {
		spread := times[len(times)-1].Sub(times[0])
		require.Less(t, spread, 5*time.Second, "replica %s was placed in parts, %s apart", replica, spread)
	}
}

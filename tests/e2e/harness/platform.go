// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

// PreparePlatform makes what a platform team has in place before a service names it: its
// namespace, its Volcano queue and priority class, the nodes Karpenter would launch for its
// karpenter pools (kwok nodes with the pool's karpenter.sh/nodepool label, labels and taints) and
// the nodes of its existing pools (with the pool's labels and taints), the storage classes and
// credentials Secrets of its models.
// The objects are removed when the test ends.
func PreparePlatform(t *testing.T, svc *api.InferenceService) {
	t.Helper()
	ctx := context.Background()
	EnsureNamespace(t, svc.Namespace)
	prepareModelStorage(t, svc)
	if strategy := svc.Spec.SchedulingStrategy; strategy != nil {
		if strategy.Queue != "" && strategy.Queue != "default" {
			queue := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
				"metadata": map[string]any{"name": strategy.Queue},
				"spec":     map[string]any{"weight": int64(1), "reclaimable": true},
			}}
			_, err := Cluster.Dynamic.Resource(queueResource).Create(ctx, queue, metav1.CreateOptions{})
			removeWhenDone(t, err, func() error {
				return Cluster.Dynamic.Resource(queueResource).Delete(ctx, strategy.Queue, metav1.DeleteOptions{})
			})
		}
		if name := strategy.PriorityClassName; name != "" {
			_, err := Cluster.Clientset.SchedulingV1().PriorityClasses().Create(ctx,
				&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 1000}, metav1.CreateOptions{})
			removeWhenDone(t, err, func() error {
				return Cluster.Clientset.SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{})
			})
		}
	}
	// GPU feature discovery labels a node with its GPU's product; a pool's accelerators select it.
	gpuProduct := map[string]string{}
	for _, pool := range svc.Spec.NodePools {
		if len(pool.Accelerators) > 0 {
			gpuProduct[pool.Name] = pool.Accelerators[0]
		}
	}
	addPoolNodes := func(pool, name string, labels map[string]string, taints []corev1.Taint) {
		if product := gpuProduct[pool]; product != "" {
			labels = maps.Clone(labels)
			labels["nvidia.com/gpu.product"] = product
		}
		AddNodes(t, testcluster.Nodes{Prefix: "pool-" + name, Count: 24, GPUs: 8, Labels: labels, Taints: taints})
	}
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	for _, o := range tree.Objects { // what Karpenter would launch for a karpenter pool
		if o.TypeMeta != render.KindNodePool {
			continue
		}
		pool, ok := o.Object.(*karpenter.NodePool)
		require.True(t, ok, "NodePool %s is a %T", o.Name, o.Object)
		labels := map[string]string{karpenter.NodePoolLabelKey: pool.Name}
		for k, v := range pool.Spec.Template.Labels {
			labels[k] = v
		}
		addPoolNodes(pool.Spec.Template.Labels[render.LabelNodePool], pool.Name, labels, pool.Spec.Template.Spec.Taints)
	}
	for _, pool := range svc.Spec.NodePools { // the nodes of an existing pool
		if pool.PoolKind() == api.NodePoolExisting {
			var taints []corev1.Taint
			for _, taint := range pool.Taints {
				taints = append(taints, corev1.Taint{Key: taint.Key, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect)})
			}
			addPoolNodes(pool.Name, svc.Name+"-"+pool.Name, pool.Labels, taints)
		}
	}
}

// prepareModelStorage makes the storage classes the service's models name (volumes from
// kube-controller-manager's host-path provisioner, bound at once, as a shared filesystem's CSI
// driver would give) and their credentials Secrets.
func prepareModelStorage(t *testing.T, svc *api.InferenceService) {
	t.Helper()
	ctx := context.Background()
	models := []*api.Model{svc.Spec.Model}
	for i := range svc.Spec.Roles {
		models = append(models, svc.Spec.Roles[i].Model)
	}
	for _, m := range models {
		if m == nil {
			continue
		}
		classes := []string{m.CompileCacheStorageClass()}
		if m.Cache != nil {
			classes = append(classes, m.Cache.StorageClassName)
		}
		for _, class := range classes {
			if class == "" {
				continue
			}
			_, err := Cluster.Clientset.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
				ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: testcluster.HostPathProvisioner,
				ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
				VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
			}, metav1.CreateOptions{})
			removeWhenDone(t, err, func() error {
				return Cluster.Clientset.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{})
			})
		}
		if ref := m.CredentialsSecret; ref != nil {
			_, err := Cluster.Clientset.CoreV1().Secrets(svc.Namespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: ref.Name}, StringData: map[string]string{"HF_TOKEN": "hf_e2e"},
			}, metav1.CreateOptions{})
			removeWhenDone(t, err, func() error {
				return Cluster.Clientset.CoreV1().Secrets(svc.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{})
			})
		}
	}
}

// removeWhenDone takes the result of creating a platform object: one already there (another
// test's, or the platform's) stays; one this create made is removed when the test ends.
func removeWhenDone(t *testing.T, err error, remove func() error) {
	t.Helper()
	if apierrors.IsAlreadyExists(err) {
		return
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = remove() })
}

var (
	queueResource     = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
	hyperNodeResource = schema.GroupVersionResource{Group: "topology.volcano.sh", Version: "v1alpha1", Resource: "hypernodes"}
)

// AddNodesWithTopology adds count nodes named {prefix}-{i} in a two-tier network: tier-1
// HyperNodes of perSwitch nodes (one leaf switch each) under one tier-2 HyperNode (the spine).
func AddNodesWithTopology(t *testing.T, prefix string, count, perSwitch int) {
	t.Helper()
	AddGPUNodes(t, prefix, count)
	var leaves []any
	for first := 0; first < count; first += perSwitch {
		var members []any
		for i := first; i < min(first+perSwitch, count); i++ {
			members = append(members, map[string]any{"type": "Node", "selector": map[string]any{"exactMatch": map[string]any{"name": fmt.Sprintf("%s-%d", prefix, i)}}})
		}
		name := fmt.Sprintf("%s-leaf-%d", prefix, first/perSwitch)
		createHyperNode(t, name, 1, members)
		leaves = append(leaves, map[string]any{"type": "HyperNode", "selector": map[string]any{"exactMatch": map[string]any{"name": name}}})
	}
	createHyperNode(t, prefix+"-spine", 2, leaves)
}

// AddNodes adds the nodes for the test and removes them when it ends.
func AddNodes(t testing.TB, nodes testcluster.Nodes) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, Cluster.AddNodes(ctx, nodes))
	t.Cleanup(func() { _ = Cluster.DeleteNodes(ctx, nodes.Prefix) })
}

// AddGPUNodes adds count nodes of 8 GPUs named {prefix}-{i} for the test.
func AddGPUNodes(t *testing.T, prefix string, count int) {
	t.Helper()
	AddNodes(t, testcluster.Nodes{Prefix: prefix, Count: count, GPUs: 8})
}

func createHyperNode(t *testing.T, name string, tier int64, members []any) {
	t.Helper()
	ctx := context.Background()
	hyperNode := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"tier": tier, "members": members},
	}}
	_, err := Cluster.Dynamic.Resource(hyperNodeResource).Create(ctx, hyperNode, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = Cluster.Dynamic.Resource(hyperNodeResource).Delete(ctx, name, metav1.DeleteOptions{}) })
}

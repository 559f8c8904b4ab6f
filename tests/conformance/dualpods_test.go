// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// TestFMAPoliciesLetOnlyTheControllerAccountChangeDualPodsState installs the dual-pods example's
// controller objects (FMA's CRDs, admission policies, account and permissions) on the real API
// server, then changes a pod's FMA-managed annotation twice: as a cluster admin, which FMA's
// policy refuses, and as the controller's account, which the policy exempts by its name
// ("*-fma-controllers") and our Role lets update pods.
func TestFMAPoliciesLetOnlyTheControllerAccountChangeDualPodsState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	trees := exampleTrees(t)["granite-sleep-wake.yaml"]
	require.Len(t, trees, 1)
	tree := trees[0]
	ns := tree.Service.Namespace
	require.NoError(t, testCluster.ensureNamespace(ctx, ns))
	var installed []*unstructured.Unstructured
	for _, o := range tree.Objects {
		if o.TypeMeta == render.KindLeaderWorkerSet || o.Role != "" {
			continue // the requesters and the router are not what this test is about
		}
		m, err := o.Unstructured()
		require.NoError(t, err)
		obj := &unstructured.Unstructured{Object: m}
		_, err = testCluster.apply(ctx, obj)
		require.NoError(t, err, "%s/%s", o.Kind, o.Name)
		installed = append(installed, obj)
	}
	defer func() {
		for i := len(installed) - 1; i >= 0; i-- {
			// FMA's CRDs stay: one deleted right after its group's were created can stay
			// Terminating for minutes (examples_test.go says why), and the example's own test,
			// which applies them next, then waited on it past its deadline (seen once in a local
			// make conformance).
			if installed[i].GetKind() != "CustomResourceDefinition" {
				_ = testCluster.delete(ctx, installed[i])
			}
		}
	}()

	admin, err := kubernetes.NewForConfig(testCluster.config)
	require.NoError(t, err)
	asController := rest.CopyConfig(testCluster.config)
	asController.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + api.FMAServiceAccountName(tree.Service.Name),
		Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	controller, err := kubernetes.NewForConfig(asController)
	require.NoError(t, err)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "requester-under-test", Namespace: ns,
			Annotations: map[string]string{"dual-pods.llm-d.ai/status": `{"Errors":[]}`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "inference-server", Image: api.DefaultRequesterImage}}},
	}
	_, err = admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	defer func() { _ = admin.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}) }()

	setStatus := func(client kubernetes.Interface, value string) error {
		live, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		live.Annotations["dual-pods.llm-d.ai/status"] = value
		_, err = client.CoreV1().Pods(ns).Update(ctx, live, metav1.UpdateOptions{})
		return err
	}
	// The policy takes effect once the API server has compiled it and seen its binding.
	attempt := 0
	require.NoError(t, waitFor(30*time.Second, func() error {
		attempt++ // a new value each time: setting the value it already has changes nothing
		if err := setStatus(admin, fmt.Sprintf(`{"Errors":["forged %d"]}`, attempt)); err == nil {
			return assert.AnError
		}
		return nil
	}), "FMA's policy refuses an admin's change of dual-pods state")
	err = setStatus(admin, `{"Errors":["forged again"]}`)
	assert.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "refused by admission: %v", err)
	assert.Contains(t, err.Error(), "managed by FMA controllers")
	require.NoError(t, setStatus(controller, `{"Errors":["from the controller"]}`),
		"the controller's account is exempt by its name and may update pods")
}

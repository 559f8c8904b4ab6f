// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// availableReplicas counts the namespace's LWSs that are Available.
func availableReplicas(t *testing.T, namespace string) int {
	t.Helper()
	list, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	n := 0
	for i := range list.Items {
		if ok, _, _ := harness.HasCondition(&list.Items[i], "Available", "True"); ok {
			n++
		}
	}
	return n
}

// await: minimal on a cluster too small for the whole service (story 4 with 2 prefill and 3
// decode replicas, 16 nodes at full size, on 8): `pulumi up` returns once the gang's minimal set
// (one prefill, one decode) runs; the other replicas come up when nodes are added.
func TestAwaitMinimalReturnsWhenTheMinimalSetRuns(t *testing.T) {
	harness.AddGPUNodes(t, "minimal", 8)
	namespace := "minimal"
	harness.EnsureNamespace(t, namespace)
	svc := story4(t, namespace, api.AwaitMinimal)
	s := harness.NewStack(t, harness.ServicesProgram(svc))
	s.Up()
	status := s.Outputs(svc.Name)["status"].ObjectValue()
	for _, role := range []string{"prefill", "decode"} {
		assert.GreaterOrEqual(t, status[resource.PropertyKey(role)].ObjectValue()["readyReplicas"].NumberValue(), 1.0, "%s's minimal replica runs", role)
	}
	assert.Less(t, availableReplicas(t, namespace), 5, "the cluster has no room for the whole service")

	harness.AddGPUNodes(t, "minimal-more", 8)
	require.Eventually(t, func() bool { return availableReplicas(t, namespace) == 5 }, 3*time.Minute, time.Second,
		"every replica runs once the nodes are there")
	assert.Equal(t, map[string]string{"prefill": inferenceservice.PhaseRunning, "decode": inferenceservice.PhaseRunning},
		s.RefreshedStatus(svc.Name), "the status after pulumi up --refresh")
	s.Destroy()
}

// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"fmt"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

// The rollout a Pulumi engine runs is fixed by the options the component registers: each LWS is
// created with no other replica to wait for; its rollout depends on its LWS and on the barrier
// of the batch before it, which depends on the whole batch and nothing else (so the dependencies
// are linear in the replicas: docs/design/0038-state-linear-in-the-replicas.md); it waits for the
// Available condition, and a pinned one ignores template changes.
func TestRolloutOptionsTheComponentRegisters(t *testing.T) {
	cases := []struct {
		replicas       int
		maxUnavailable *intstr.IntOrString
		partition      *int
		batches        [][]int
	}{
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromInt32(2)), batches: [][]int{{0, 1}, {2, 3}, {4, 5}}},
		{replicas: 4, batches: [][]int{{0}, {1}, {2}, {3}}}, // the default 25%
		{replicas: 5, maxUnavailable: ptr.To(intstr.FromString("40%")), batches: [][]int{{0, 1}, {2, 3}, {4}}},
		{replicas: 6, maxUnavailable: ptr.To(intstr.FromInt32(3)), partition: ptr.To(2), batches: [][]int{{0, 1, 2}, {3, 4, 5}}},
		{replicas: 2, maxUnavailable: ptr.To(intstr.FromString("100%")), batches: [][]int{{0, 1}}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d replicas, maxUnavailable %v, partition %v", tc.replicas, tc.maxUnavailable, ptr.Deref(tc.partition, 0)), func(t *testing.T) {
			args := &Args{Roles: []RoleArgs{{Name: "chat", ComponentType: "worker", Replicas: ptr.To(tc.replicas),
				Template:        vllmTemplate("8", "kv_both", "8"),
				RolloutStrategy: &api.RolloutStrategy{MaxUnavailable: tc.maxUnavailable, Partition: tc.partition}}}}
			monitor := &pulumimock.Monitor{}
			require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
				_, err := NewInferenceService(ctx, "svc", args)
				return err
			}))
			find := func(name string) pulumimock.Resource {
				r, ok := monitor.Find(name)
				require.True(t, ok, "%s registered", name)
				return r
			}
			created := find("svc-batch-0-done")
			assert.Equal(t, typeBarrier, created.Type)
			before := []string{created.URN()} // the barrier of the batch before: barrier 0 for the first
			barriers := 1
			var lwss []string
			for b, batch := range tc.batches {
				var this []string
				for _, replica := range batch {
					lws := find(fmt.Sprintf("svc-chat-%d", replica))
					rollout := find(fmt.Sprintf("svc-chat-%d-rollout", replica))
					assert.Empty(t, lws.Dependencies, "replica %d is created at once", replica)
					assert.ElementsMatch(t, append([]string{lws.URN()}, before...), rollout.Dependencies,
						"replica %d is rolled after the barrier of the batch before", replica)
					lwss = append(lwss, lws.URN())
					for _, r := range []pulumimock.Resource{lws, rollout} {
						annotations := r.Inputs["metadata"].Mappable().(map[string]any)["annotations"].(map[string]any)
						assert.Equal(t, "condition=Available", annotations["pulumi.com/waitFor"], "%s waits for Available", r.Name)
						_, skipped := annotations["pulumi.com/skipAwait"]
						assert.Equal(t, r.Name == lws.Name, skipped, "%s: the LWS is created without a wait, its rollout waits", r.Name)
						_, background := annotations["pulumi.com/deletionPropagationPolicy"]
						assert.Equal(t, r.Name == lws.Name, background, "%s: the LWS is deleted in the background, its rollout is retained", r.Name)
					}
					if tc.partition != nil && replica < *tc.partition {
						assert.NotEmpty(t, rollout.IgnoreChanges, "replica %d is pinned", replica)
					} else {
						assert.Empty(t, rollout.IgnoreChanges, "replica %d rolls", replica)
					}
					this = append(this, rollout.URN())
				}
				before = nil
				if b < len(tc.batches)-1 {
					barrier := find(fmt.Sprintf("svc-batch-%d-done", b+1))
					assert.Equal(t, typeBarrier, barrier.Type)
					assert.ElementsMatch(t, this, barrier.Dependencies, "batch %d's barrier is passed once the whole batch is", b+1)
					before = []string{barrier.URN()}
					barriers++
				}
			}
			assert.ElementsMatch(t, lwss, created.Dependencies, "barrier 0 is passed once every replica is created")
			registered := 0
			for _, r := range monitor.Resources() {
				if r.Type == typeBarrier {
					registered++
				}
			}
			assert.Equal(t, barriers, registered, "barrier 0 and a barrier for each batch but the last")
		})
	}
}

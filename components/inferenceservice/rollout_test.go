package inferenceservice

import (
	"fmt"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/pulumimock"
)

// The rollout a Pulumi engine runs is fixed by the options the component registers: each LWS
// depends on the whole batch before it, waits for its Available condition, and a pinned one
// ignores template changes.
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
			urn := func(replica int) string {
				r, ok := monitor.Find(fmt.Sprintf("svc-chat-%d", replica))
				require.True(t, ok, "replica %d registered", replica)
				return r.URN()
			}
			var before []string
			for _, batch := range tc.batches {
				var this []string
				for _, replica := range batch {
					lws, _ := monitor.Find(fmt.Sprintf("svc-chat-%d", replica))
					assert.ElementsMatch(t, before, lws.Dependencies, "replica %d depends on exactly the batch before", replica)
					annotations := lws.Inputs["metadata"].Mappable().(map[string]any)["annotations"].(map[string]any)
					assert.Equal(t, "condition=Available", annotations["pulumi.com/waitFor"], "replica %d is awaited", replica)
					if tc.partition != nil && replica < *tc.partition {
						assert.NotEmpty(t, lws.IgnoreChanges, "replica %d is pinned", replica)
					} else {
						assert.Empty(t, lws.IgnoreChanges, "replica %d rolls", replica)
					}
					this = append(this, urn(replica))
				}
				before = this
			}
		})
	}
}

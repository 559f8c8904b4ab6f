// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// A prefill/decode service rolls on the real controllers in the default order: the gang's minimal
// set (one of each) together, then the other decoders, then the other prefillers.
func TestPrefillDecodeRollsDecodersFirstOnTheCluster(t *testing.T) {
	harness.AddGPUNodes(t, "pd", 4)
	namespace := "pd-rollout"
	harness.EnsureNamespace(t, namespace)
	image := "vllm/vllm-openai:v0.33.0"
	kv := `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`
	s := harness.NewStack(t, harness.ComponentProgram("pd", func() *inferenceservice.Args {
		role := func(name, componentType string) inferenceservice.RoleArgs {
			return inferenceservice.RoleArgs{Name: name, ComponentType: api.ComponentType(componentType), Replicas: ptr.To(2),
				Template: harness.Server(image, 3*time.Second, "--model", "Qwen/Qwen3-32B", "--kv-transfer-config", kv)}
		}
		return &inferenceservice.Args{Namespace: namespace, Roles: []inferenceservice.RoleArgs{role("prefill", "prefiller"), role("decode", "decoder")}}
	}))
	s.Up()
	before := harness.Revisions(t, namespace)
	watch := harness.WatchLeaderWorkerSets(t, namespace)
	image = "vllm/vllm-openai:v0.33.1"
	s.Up()
	done := harness.Rollouts(watch.End(), before)
	harness.AssertOrdered(t, done, []string{"pd-decode-0", "pd-prefill-0"}, []string{"pd-decode-1"}, []string{"pd-prefill-1"})
	s.Destroy()
}

// A template change to a 6-replica role with maxUnavailable 2, on the real LWS controller: three
// batches in order, never more than 2 replicas unavailable; with a partition, the replicas below
// it keep their template; a second `pulumi up` changes nothing. The same through the real
// pulumi-kubernetes provider as the engine's plugin, not the wire: that case last, and this
// test last in its file, so that a new machine's tests through the wire run before they wait
// for the provider's build (withprovider_examples_test.go).
func TestRolloutOnTheCluster(t *testing.T) {
	harness.AddGPUNodes(t, "rollout", 6)
	sixInPairs := [][]string{{"chat-chat-0", "chat-chat-1"}, {"chat-chat-2", "chat-chat-3"}, {"chat-chat-4", "chat-chat-5"}}
	cases := []struct {
		name      string
		partition *int
		batches   [][]string
		kept      []string
		stack     func(testing.TB, func(*pulumi.Context) error) *harness.Stack
	}{
		{name: "maxUnavailable 2", batches: sixInPairs, stack: harness.NewStack},
		{name: "partition 2", partition: ptr.To(2), batches: [][]string{{"chat-chat-2", "chat-chat-3"}, {"chat-chat-4", "chat-chat-5"}},
			kept: []string{"chat-chat-0", "chat-chat-1"}, stack: harness.NewStack},
		{name: "maxUnavailable 2, the real provider", batches: sixInPairs, stack: harness.NewStackOnTheRealProvider},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			namespace := fmt.Sprintf("rollout-%d", i)
			harness.EnsureNamespace(t, namespace)
			image := "vllm/vllm-openai:v0.33.0"
			s := tc.stack(t, harness.Chat(namespace, 6,
				&api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Partition: tc.partition}, 3*time.Second, &image))
			s.Up()
			assert.Empty(t, s.Preview(), "a preview of the program just deployed changes nothing")
			before := harness.Revisions(t, namespace)
			watch := harness.WatchLeaderWorkerSets(t, namespace)
			image = "vllm/vllm-openai:v0.33.1"
			s.Up()
			states := watch.End()
			done := harness.Rollouts(states, before)
			var rolled []string
			for name := range done {
				rolled = append(rolled, name)
			}
			sort.Strings(rolled)
			var want []string
			for _, b := range tc.batches {
				want = append(want, b...)
			}
			assert.Equal(t, want, rolled, "the replicas that took the new template")
			harness.AssertOrdered(t, done, tc.batches...)
			assert.Equal(t, 2, harness.MostUnavailable(states), "never more than maxUnavailable replicas down, and that many at once")
			after := harness.Revisions(t, namespace)
			for _, name := range tc.kept {
				assert.Equal(t, before[name], after[name], "%s keeps its template", name)
			}
			for name, phase := range s.Phases("chat") {
				assert.Equal(t, inferenceservice.PhaseRunning, phase, name)
			}
			assert.Empty(t, s.Preview(), "a preview after the rollout changes nothing")
			s.Destroy()
		})
	}
}

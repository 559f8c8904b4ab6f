// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// Package lwsv080 shows, on the LeaderWorkerSet controller v0.8.0, what the README warns of: its
// status carries no observedGeneration, so the wait for Available after a template change passes
// on the previous status and the rollout's batches overlap.
package lwsv080

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.MainWithLeaderWorkerSet(m, "v0.8.0") }

// The same change as tests/e2e's TestRolloutOnTheCluster (6 replicas, maxUnavailable 2): on v0.8.0
// every batch's wait passes at once, so a later batch's replicas take the new template before the
// batch before is Available again. Asserted as that order, not as a count of replicas down at one
// instant, which depends on how fast a loaded machine's LWS controller rolls each (issue 54).
func TestRolloutBatchesOverlapOnLWSv080(t *testing.T) {
	harness.AddGPUNodes(t, "v080", 6)
	namespace := "lws-v080"
	harness.EnsureNamespace(t, namespace)
	image := "vllm/vllm-openai:v0.33.0"
	s := harness.NewStack(t, harness.Chat(namespace, 6, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}, 3*time.Second, &image))
	s.Up()
	before := harness.Revisions(t, namespace)
	watch := harness.WatchLeaderWorkerSets(t, namespace)
	image = "vllm/vllm-openai:v0.33.1"
	s.Up()
	states := watch.EndWhenRolled(t, namespace, "chat", image)
	overlaps := harness.Overlaps(harness.Rollouts(states, before),
		[]string{"chat-chat-0", "chat-chat-1"}, []string{"chat-chat-2", "chat-chat-3"}, []string{"chat-chat-4", "chat-chat-5"})
	testcluster.Progress("LWS v0.8.0: a rollout with maxUnavailable 2 had %d of 6 replicas unavailable at once; batches overlapping: %v",
		harness.MostUnavailable(states), overlaps)
	assert.NotEmpty(t, overlaps, "the waits pass on the previous status: a batch starts before the one before is Available")
	s.Destroy()
}

// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// modelLoadTime is how long a model server takes to become Ready in the first-deploy measurement.
const modelLoadTime = 30 * time.Second

// A first deployment of 8 replicas (rolled, at the default 25%, in 4 batches of 2) creates them
// all at once: `pulumi up` returns when all 8 serve, within 1.5x the time of one replica alone,
// not 4x. The figures go to the log (and docs/performance.md).
func TestFirstDeployLoadsEveryReplicaAtOnce(t *testing.T) {
	harness.AddGPUNodes(t, "first", 8)
	deploy := func(replicas int) time.Duration {
		namespace := fmt.Sprintf("first-%d", replicas)
		harness.EnsureNamespace(t, namespace)
		image := "vllm/vllm-openai:v0.33.0"
		s := harness.NewStack(t, harness.Chat(namespace, replicas, nil, modelLoadTime, &image))
		start := time.Now()
		s.Up()
		elapsed := time.Since(start)
		for role, phase := range s.Phases("chat") {
			assert.Equal(t, inferenceservice.PhaseRunning, phase, role)
		}
		s.Destroy()
		return elapsed
	}
	one := deploy(1)
	eight := deploy(8)
	testcluster.Progress("first deployment with a %s model load: 1 replica %s, 8 replicas %s (%.2fx)",
		modelLoadTime, one.Round(100*time.Millisecond), eight.Round(100*time.Millisecond), eight.Seconds()/one.Seconds())
	assert.Less(t, eight.Seconds(), 1.5*one.Seconds(), "8 replicas come up within 1.5x the time of one")
}

// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// modelLoadTime is how long a model server takes to become Ready after its pod is scheduled in
// the first-deploy measurements (issue 46's figure).
const modelLoadTime = 20 * time.Second

// firstDeploy times `pulumi up` of a new stack of replicas of a worker role (rolled, at the
// default 25%, in four batches) through the real pulumi-kubernetes provider at its defaults and
// the engine's default parallelism (4 per CPU), until every replica is Available; then destroys
// it, untimed.
func firstDeploy(t testing.TB, replicas int) time.Duration {
	t.Helper()
	namespace := fmt.Sprintf("first-%d", replicas)
	harness.EnsureNamespace(t, namespace)
	image := "vllm/vllm-openai:v0.33.0"
	s := harness.NewStackOnTheRealProvider(t, harness.Chat(namespace, replicas, nil, modelLoadTime, &image))
	start := time.Now()
	s.Up()
	elapsed := time.Since(start)
	for role, phase := range s.Phases("chat") {
		assert.Equal(t, inferenceservice.PhaseRunning, phase, role)
	}
	s.Destroy()
	return elapsed
}

// A first deployment of 32 replicas, four times the engine's default workers on 2 cores, loads
// every model at once: `pulumi up` returns when all 32 serve, within 1.5x the time of one
// replica alone, not the four model loads in a row that waiting for each replica's creation cost
// (docs/design/0040-every-replica-loads-before-any-wait.md). The figures go to the log (and
// docs/performance.md).
func TestFirstDeployLoadsEveryReplicaAtOnce(t *testing.T) {
	harness.AddGPUNodes(t, "first", 32)
	one := firstDeploy(t, 1)
	many := firstDeploy(t, 32)
	testcluster.Progress("first deployment with a %s model load, the real provider, %d workers: 1 replica %s, 32 replicas %s (%.2fx)",
		modelLoadTime, 4*runtime.GOMAXPROCS(0), one.Round(100*time.Millisecond), many.Round(100*time.Millisecond), many.Seconds()/one.Seconds())
	assert.Less(t, many.Seconds(), 1.5*one.Seconds(), "32 replicas come up within 1.5x the time of one")
}

// BenchmarkFirstDeploy is TestFirstDeployLoadsEveryReplicaAtOnce's measurement at 1, 32 and 100
// replicas (`make bench-cluster`), each reported with its ratio to one replica's.
func BenchmarkFirstDeploy(b *testing.B) {
	harness.AddNodes(b, testcluster.Nodes{Prefix: "bench-first", Count: 100, GPUs: 8})
	var one time.Duration
	for _, replicas := range []int{1, 32, 100} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				took = firstDeploy(b, replicas)
				b.StartTimer()
			}
			if replicas == 1 {
				one = took
			}
			b.ReportMetric(took.Seconds(), "s/up")
			if one > 0 {
				b.ReportMetric(took.Seconds()/one.Seconds(), "x-one-replica")
			}
		})
	}
}

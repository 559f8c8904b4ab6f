// SPDX-License-Identifier: Apache-2.0

package engine_test

import (
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
)

// BenchmarkEnginePreview is `pulumi preview` of the target service (1,000 decode replicas x 4
// nodes + 250 prefill replicas x 2 nodes: 1,250 replicas, each an LWS and its rollout) through
// Pulumi's engine in-process, program and engine included, the provider called in-process (no
// gRPC). The goal: under 30 s. BenchmarkEnginePreviewOverGRPC is the same as the real engine runs it.
func BenchmarkEnginePreview(b *testing.B) {
	plan, log := programPlan(b, &cluster{}, targetProgram(b))
	for b.Loop() {
		if _, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(b, nil), plan.Options, true, nil, nil, "preview"); err != nil {
			b.Fatal(err, log)
		}
	}
}

// SPDX-License-Identifier: Apache-2.0

package engine_test

import (
	"os"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/enginetest"
)

// targetProgram deploys the target service: 1,000 decode replicas x 4 nodes + 250 prefill
// replicas x 2 nodes, 1,250 replicas, each an LWS and its rollout.
func targetProgram(b *testing.B) pulumi.RunFunc {
	data, err := os.ReadFile("../perf/testdata/pd-1000-decode-250-prefill.yaml")
	if err != nil {
		b.Fatal(err)
	}
	docs, errs := api.Decode(data)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	svc := docs[0].Service
	return func(ctx *pulumi.Context) error {
		_, err := inferenceservice.NewFromService(ctx, svc.Name, svc, nil)
		return err
	}
}

// BenchmarkEnginePreviewOverGRPC is `pulumi preview` of the target service on a new stack as the
// real engine runs it: the program's registrations over the resource monitor's gRPC, and the
// kubernetes provider a plugin process that the engine calls over gRPC (Check and Create at
// preview for each of the 2,503 resources), answering with the provider's rules
// (mirror/kubeprovider).
func BenchmarkEnginePreviewOverGRPC(b *testing.B) {
	plan, log := enginetest.Plan(b, func(string) plugin.Provider { return pluginProvider(b) }, targetProgram(b))
	for b.Loop() {
		if _, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(b, nil), plan.Options, true, nil, nil, "preview"); err != nil {
			b.Fatal(err, log)
		}
	}
}

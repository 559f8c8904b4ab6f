package engine_test

import (
	"os"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

// BenchmarkEnginePreview is `pulumi preview` of the target service (1,000 decode replicas x 4
// nodes + 250 prefill replicas x 2 nodes: 1,250 replicas, each an LWS and its rollout) through
// Pulumi's engine in-process, program and engine included. The goal: under 30 s.
func BenchmarkEnginePreview(b *testing.B) {
	data, err := os.ReadFile("../perf/testdata/pd-1000-decode-250-prefill.yaml")
	if err != nil {
		b.Fatal(err)
	}
	docs, errs := api.Decode(data)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	svc := docs[0].Service
	plan, log := programPlan(b, &cluster{}, func(ctx *pulumi.Context) error {
		_, err := inferenceservice.NewFromService(ctx, svc.Name, svc, nil)
		return err
	})
	for b.Loop() {
		if _, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(b, nil), plan.Options, true, nil, nil, "preview"); err != nil {
			b.Fatal(err, log)
		}
	}
}

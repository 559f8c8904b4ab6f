// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"fmt"
	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

// BenchmarkComponent registers the whole component under Pulumi mocks: one worker role of 4
// nodes x 8 GPUs with 10, 100 and 1,000 replicas (a LeaderWorkerSet each, plus the PodGroup),
// without and with a router (9 more children).
func BenchmarkComponent(b *testing.B) {
	for _, routed := range []bool{false, true} {
		for _, replicas := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("router=%v/replicas=%d", routed, replicas), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					n := replicas
					args := &Args{Roles: []RoleArgs{{
						Name: "inference", ComponentType: "worker", Replicas: &n, Multinode: &api.Multinode{NodeCount: 4},
						Template: vllmTemplate("32", "kv_both", "8"),
					}}}
					want := 2*replicas + 2 // each replica: its LWS and its rollout
					if routed {
						args.Roles = append(args.Roles, RoleArgs{Name: "router", ComponentType: "router",
							HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}}})
						want += 8
					}
					monitor := &pulumimock.Monitor{}
					err := monitor.Run(func(ctx *pulumi.Context) error {
						_, err := NewInferenceService(ctx, "bench", args)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					got, barriers := 0, 0
					for _, r := range monitor.Resources() {
						if r.Type == typeBarrier {
							barriers++
						} else {
							got++
						}
					}
					if got != want || barriers == 0 {
						b.Fatalf("%d resources and %d rollout barriers registered, want %d and some", got, barriers, want)
					}
				}
			})
		}
	}
}

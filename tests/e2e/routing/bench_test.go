// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// benchGPU is simulatedGPU with a KV cache of 400 blocks of 16 tokens a server: the
// benchmark's sessions (12 of about 1,000 tokens, 750 blocks) do not fit one server's cache,
// and fit three if each server keeps its own sessions.
const benchGPU = "--latency-calculator=per-token --prefill-overhead=20ms --prefill-time-per-token=1ms " +
	"--inter-token-latency=10ms --max-num-seqs=4 --enable-kvcache --kv-cache-size=400 --block-size=16"

// BenchmarkRouting measures the request path of a router on the simulated cluster, three servers
// behind GIE v1.5.0's Endpoint Picker with the default scorers (queue, KV-cache use, prefix cache),
// then behind GIE v1.6.0's round-robin lwepp:
//
//   - pick: the EPP's decision, from the request's headers sent to its answer, at the gateway
//     (p50, p99), one request after the other;
//   - ttft/{load-aware+prefix,round-robin}: the time to first token clients see, at the same
//     offered load (requests arriving at a fixed rate, open loop) of 12 sessions whose prompts share
//     a long prefix each, on llm-d-inference-sim's latency model (prefill grows with the prompt
//     tokens not in the server's KV cache, requests beyond 4 queue).
//
// make bench-routing: go test -tags e2e -run '^$' -bench Routing -benchtime 1000x ./tests/e2e/routing
func BenchmarkRouting(b *testing.B) {
	const namespace = "routing-bench"
	harness.AddNodes(b, testcluster.Nodes{Prefix: "bench", Count: 1, GPUs: 8})
	args := service(namespace, 3, router(""))
	args.Roles[0].Template = server(map[string]string{testcluster.ModelServerArgsAnnotation: benchGPU})
	r := deploy(b, "chat", args)

	b.Run("pick", func(b *testing.B) {
		before := len(r.gateway.Records())
		for i := 0; b.Loop(); i++ {
			if resp := complete(r.gateway.URL, fmt.Sprintf("Pick %d", i), 1, false); resp.err != nil {
				b.Fatal(resp.err)
			}
		}
		picks := pickLatencies(r.gateway.Records()[before:])
		b.ReportMetric(float64(quantile(picks, 0.5).Microseconds()), "pick-p50-µs")
		b.ReportMetric(float64(quantile(picks, 0.99).Microseconds()), "pick-p99-µs")
	})
	seed := uint64(100)
	offered := func(b *testing.B) {
		seed++ // each run's sessions are new to the servers' caches
		ttfts := openLoop(b, r.gateway.URL, 8, 12, seed)
		b.ReportMetric(float64(quantile(ttfts, 0.5).Milliseconds()), "ttft-p50-ms")
		b.ReportMetric(float64(quantile(ttfts, 0.9).Milliseconds()), "ttft-p90-ms")
	}
	b.Run("ttft/load-aware+prefix", offered)
	args.Roles[1] = roundRobinRouter()
	r.stack.Up()
	r.waitForNewEndpointPicker()
	b.Run("ttft/round-robin", offered)
}

// openLoop sends b.N completions, rate a second whatever comes back, each of one of sessions
// sessions drawn at random (a prompt of about 1,000 tokens of the session's own, then a question),
// and returns their times to first token.
func openLoop(b *testing.B, url string, rate, sessions int, seed uint64) []time.Duration {
	b.Helper()
	prefixes := make([]string, sessions)
	for s := range prefixes {
		prefixes[s] = longText(seed*1000+uint64(s), 900)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	session := make([]int, b.N)
	for i := range session {
		session[i] = rng.IntN(sessions)
	}
	ttfts := make([]time.Duration, b.N)
	errs := make([]error, b.N)
	var wg sync.WaitGroup
	start := time.Now()
	b.ResetTimer()
	for i := range b.N {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		wg.Go(func() {
			resp := complete(url, fmt.Sprintf("%s\nQuestion %d?", prefixes[session[i]], i), 16, true)
			ttfts[i], errs[i] = resp.ttft, resp.err
			if resp.err == nil && resp.status != 200 {
				errs[i] = fmt.Errorf("status %d", resp.status)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("request %d: %v", i, err)
		}
	}
	return ttfts
}

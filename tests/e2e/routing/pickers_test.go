// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// randomPicker is an EndpointPickerConfig that picks a pod of the pool at random: the baseline a
// scorer must beat.
const randomPicker = `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: random-picker
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: random-picker
`

// picker is a router role the tests compare.
type picker struct {
	name   string
	router inferenceservice.RoleArgs
}

func randomRouter() inferenceservice.RoleArgs {
	r := router("")
	r.EndpointPickerConfig = randomPicker
	return r
}

// Load-aware picks follow skewed queues: with one pod of three kept busy by requests sent to it
// directly (a queue of waiting requests on the sim), the queue scorer sends the gateway's requests
// elsewhere; round-robin (GIE's lightweight EPP) sends it its share.
func TestLoadAwarePicksFollowSkewedQueues(t *testing.T) {
	const namespace = "routing-queues"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "queues", Count: 1, GPUs: 8})
	args := service(namespace, 3, router("queue-size"))
	r := deploy(t, "chat", args)
	hot := pods(t, namespace, "chat", "server")[0]
	hotURL := "http://" + net.JoinHostPort(hot.Status.PodIP, "8000")
	background := startLoad(hotURL, 12, 200, 0, func(i int) string { return fmt.Sprintf("Background %d: write a long story.", i) })
	defer background.end()
	process, err := harness.Cluster.ContainerProcess(context.Background(), namespace, hot.Name, "vllm")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		families, err := serverMetrics(process)
		return err == nil && metricSum(families, "vllm:num_requests_waiting") >= 6
	}, 30*time.Second, 200*time.Millisecond, "the hot pod has a queue")

	shares := map[string]float64{}
	progress := measured(t)
	for i, p := range []picker{{"load-aware (queue-size)", router("queue-size")}, {"round-robin (lwepp)", roundRobinRouter()}} {
		if i > 0 {
			args.Roles[1] = p.router
			r.stack.Up()
			r.waitForNewEndpointPicker()
			assertEndpointPickerRunsAsRendered(t, namespace, "chat") // lwepp too runs with exactly its Deployment's flags
		}
		before := len(r.gateway.Records())
		traffic := startLoad(r.gateway.URL, 3, 4, 50*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: a short answer please.", i) })
		time.Sleep(15 * time.Second)
		requests := traffic.end()
		require.Empty(t, failures(requests))
		var toHot int
		var ttfts []time.Duration
		for _, s := range requests {
			if s.resp.pod == hot.Name {
				toHot++
			}
			ttfts = append(ttfts, s.resp.ttft)
		}
		shares[p.name] = float64(toHot) / float64(len(requests))
		progress("%s: %d of %d requests (%.0f%%) to the hot pod; TTFT p50 %s p90 %s; picks p50 %s",
			p.name, toHot, len(requests), 100*shares[p.name], quantile(ttfts, 0.5), quantile(ttfts, 0.9),
			quantile(pickLatencies(r.gateway.Records()[before:]), 0.5))
	}
	assert.Less(t, shares["load-aware (queue-size)"], 0.1, "the queue scorer keeps requests off the hot pod")
	assert.InDelta(t, 1.0/3, shares["round-robin (lwepp)"], 0.05, "round-robin sends the hot pod its third")
}

// Sessions with a long shared prefix stay on one pod when prefix scoring is on, and hit the
// server's prefix cache (shorter prefills): against a random pick.
func TestPrefixScoringKeepsSessionsOnOnePod(t *testing.T) {
	const namespace = "routing-prefix"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "prefix", Count: 1, GPUs: 8})
	args := service(namespace, 3, router("prefix-cache"))
	r := deploy(t, "chat", args)
	results := map[string]sessions{}
	progress := measured(t)
	for i, p := range []picker{{"prefix-cache", router("prefix-cache")}, {"random", randomRouter()}} {
		if i > 0 {
			args.Roles[1] = p.router
			r.stack.Up()
			r.waitForNewEndpointPicker()
		}
		results[p.name] = runSessions(t, r.gateway.URL, 6, 6, uint64(i+1)) // new texts: the servers' caches hold the first run's
		progress("%s: %s", p.name, results[p.name])
	}
	prefix, random := results["prefix-cache"], results["random"]
	assert.GreaterOrEqual(t, prefix.affinity, 0.9, "with prefix scoring a session's turns stay on its pod")
	assert.Greater(t, prefix.affinity, random.affinity+0.3, "more than a random pick")
	assert.Greater(t, prefix.hitRate, random.hitRate, "the servers' prefix caches hit more")
}

// sessions is what a run of sessions saw: the share of turns after the first served by the pod
// that served the turn before (affinity), the share of their prompt tokens the server had in its
// KV cache (hitRate), their time to first token.
type sessions struct {
	affinity, hitRate float64
	ttftP50, ttftP90  time.Duration
}

func (s sessions) String() string {
	return fmt.Sprintf("affinity %.0f%%, prefix-cache hit rate %.0f%%, TTFT of later turns p50 %s p90 %s",
		100*s.affinity, 100*s.hitRate, s.ttftP50, s.ttftP90)
}

// runSessions runs n sessions of turns each at once: a session's prompt is a long text of its own
// (about 800 words) followed by its conversation so far, growing a turn at a time.
func runSessions(t testing.TB, url string, n, turns int, seed uint64) sessions {
	t.Helper()
	var mu sync.Mutex
	var same, later, cached, prompt int
	var ttfts []time.Duration
	var wg sync.WaitGroup
	for s := range n {
		wg.Go(func() {
			conversation := longText(seed*1000+uint64(s), 800)
			previous := ""
			for turn := range turns {
				conversation += fmt.Sprintf("\nUser: question %d of session %d?\nAssistant:", turn, s)
				resp := complete(url, conversation, 8, true)
				if !assert.NoError(t, resp.err) || !assert.Equal(t, 200, resp.status) {
					return
				}
				conversation += " an answer."
				mu.Lock()
				if turn > 0 {
					later++
					if resp.pod == previous {
						same++
					}
					cached += resp.cachedTokens
					prompt += resp.promptTokens
					ttfts = append(ttfts, resp.ttft)
				}
				mu.Unlock()
				previous = resp.pod
			}
		})
	}
	wg.Wait()
	require.Positive(t, later)
	return sessions{affinity: float64(same) / float64(later), hitRate: float64(cached) / float64(max(prompt, 1)),
		ttftP50: quantile(ttfts, 0.5), ttftP90: quantile(ttfts, 0.9)}
}

// longText is words of a text of its own for seed.
func longText(seed uint64, words int) string {
	vocabulary := strings.Fields("the a model server cache prefix token request route pod gateway picker queue load time first " +
		"answer question session river mountain ocean forest city night morning light shadow stone glass iron silver")
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]string, words)
	for i := range out {
		out[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(out, " ")
}

// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

// MainWithMetrics is MainWithContainers with a real Prometheus (testcluster.Options.Prometheus)
// and KEDA, and Karpenter's kwok provider: the pods serve metrics, Prometheus scrapes what the
// PodMonitors select, KEDA reads it, Karpenter launches the nodes of the services' NodePools.
func MainWithMetrics(m *testing.M) {
	opts := options(testcluster.LWSVersion)
	opts.Containers, opts.Prometheus, opts.KEDA, opts.Karpenter = true, true, true, true
	testcluster.Main(m, opts, func(c *testcluster.Cluster) { Cluster = c })
}

// ScrapeTarget is one of Prometheus' active targets (its /api/v1/targets).
type ScrapeTarget struct {
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Labels     map[string]string `json:"labels"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

// ScrapedPrometheus configures the cluster's Prometheus from every PodMonitor deployed now, as
// prometheus-operator would (testcluster ScrapePodMonitors), waits until each of pools (scrape
// pools, "podMonitor/{namespace}/{name}/{endpoint}") has a target and Prometheus has scraped every
// target up, and returns Prometheus' URL: a test that sent traffic first can then run queries (a
// dashboard's panels') against what was scraped. The pools are named because kube-state-metrics'
// static target is there at once, before discovery has found a pod. It needs MainWithMetrics.
func ScrapedPrometheus(t testing.TB, pools ...string) string {
	t.Helper()
	require.NoError(t, Cluster.ScrapePodMonitors(context.Background()))
	var last []ScrapeTarget
	require.Eventually(t, func() bool {
		last = ScrapeTargets(t)
		found := map[string]bool{}
		for _, target := range last {
			if target.Health != "up" {
				return false
			}
			found[target.ScrapePool] = true
		}
		for _, pool := range pools {
			if !found[pool] {
				return false
			}
		}
		return len(last) > 0
	}, 2*time.Minute, time.Second, "a target in each of %v, and every target Prometheus discovered scraped up: %+v", pools, &last)
	return Cluster.PrometheusURL
}

// ScrapeTargets are Prometheus' active targets now.
func ScrapeTargets(t testing.TB) []ScrapeTarget {
	t.Helper()
	return promTargets(t, "active").ActiveTargets
}

// DroppedTarget is a target Prometheus discovered and its relabeling dropped (its
// /api/v1/targets?state=dropped): the labels discovery gave it, and its scrape pool.
type DroppedTarget struct {
	ScrapePool       string            `json:"scrapePool"`
	DiscoveredLabels map[string]string `json:"discoveredLabels"`
}

// DroppedTargets are Prometheus' dropped targets now.
func DroppedTargets(t testing.TB) []DroppedTarget {
	t.Helper()
	return promTargets(t, "dropped").DroppedTargets
}

// targets is the data of Prometheus' /api/v1/targets.
type targets struct {
	ActiveTargets  []ScrapeTarget  `json:"activeTargets"`
	DroppedTargets []DroppedTarget `json:"droppedTargets"`
}

// promTargets is Prometheus' /api/v1/targets in the given state (active or dropped).
func promTargets(t testing.TB, state string) targets {
	t.Helper()
	var body struct {
		Data targets `json:"data"`
	}
	promGet(t, "/api/v1/targets?state="+state, &body)
	return body.Data
}

// PromQuery is the value of each series of an instant PromQL query, by its labels' text.
func PromQuery(t testing.TB, query string) map[string]float64 {
	t.Helper()
	var body struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	promGet(t, "/api/v1/query?query="+url.QueryEscape(query), &body)
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		text, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(text, 64)
		require.NoError(t, err, "query %s: value %v", query, r.Value)
		out[fmt.Sprint(r.Metric)] = v
	}
	return out
}

func promGet(t testing.TB, path string, into any) {
	t.Helper()
	require.NotEmpty(t, Cluster.PrometheusURL, "the cluster runs no Prometheus: the package's TestMain is harness.MainWithMetrics")
	resp, err := http.Get(Cluster.PrometheusURL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s", path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(into))
}

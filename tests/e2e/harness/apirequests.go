// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"bytes"
	"context"
	"testing"

	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// APIRequests are the requests the simulated cluster's API server has served, from its own
// counter (apiserver_request_total at /metrics): all of them, and the dry runs among them (a
// preview's server-side dry run of a creation). Every client's requests count, the
// controllers' too; a benchmark reads them before and after what it times.
type APIRequests struct {
	All, DryRuns float64
}

// CountAPIRequests reads the API server's request counters now.
func CountAPIRequests(t testing.TB) APIRequests {
	t.Helper()
	body, err := Cluster.Clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(t, err)
	parser := expfmt.NewTextParser(prommodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	var n APIRequests
	family, ok := families["apiserver_request_total"]
	require.True(t, ok, "the API server counts its requests in apiserver_request_total")
	for _, m := range family.GetMetric() {
		v := m.GetCounter().GetValue()
		n.All += v
		for _, l := range m.GetLabel() {
			if l.GetName() == "dry_run" && l.GetValue() != "" {
				n.DryRuns += v
			}
		}
	}
	return n
}

// Since is what was served between before and n.
func (n APIRequests) Since(before APIRequests) APIRequests {
	return APIRequests{All: n.All - before.All, DryRuns: n.DryRuns - before.DryRuns}
}

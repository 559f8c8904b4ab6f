// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"
)

// Prometheus is Prometheus' instant-query API on loopback over series a test sets: the queries
// KEDA sends are evaluated by Prometheus' own PromQL engine, so a test proves that the query a
// ScaledObject carries selects the right pods and gives the right value, not only that KEDA acts
// on a number.
type Prometheus struct {
	URL     string
	storage *teststorage.TestStorage
	engine  *promql.Engine

	mu      sync.Mutex
	queries map[string]bool
}

// NewPrometheus serves an empty Prometheus until the test ends.
func NewPrometheus(t *testing.T) *Prometheus {
	t.Helper()
	storage, err := teststorage.NewWithError()
	require.NoError(t, err)
	p := &Prometheus{storage: storage, queries: map[string]bool{},
		engine: promql.NewEngine(promql.EngineOpts{MaxSamples: 100000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute})}
	server := httptest.NewServer(http.HandlerFunc(p.query))
	t.Cleanup(func() { server.Close(); _ = storage.Close() })
	p.URL = server.URL
	return p
}

// Set records value for the series named by the labels (__name__ among them), now.
func (p *Prometheus) Set(t *testing.T, series map[string]string, value float64) {
	t.Helper()
	app := p.storage.Appender(context.Background())
	_, err := app.Append(0, labels.FromMap(series), time.Now().UnixMilli(), value)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
}

// Queries are the distinct queries the server was asked.
func (p *Prometheus) Queries() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for q := range p.queries {
		out = append(out, q)
	}
	return out
}

// query answers GET or POST /api/v1/query as Prometheus does, for vector and scalar results.
func (p *Prometheus) query(w http.ResponseWriter, r *http.Request) {
	qs := r.FormValue("query")
	p.mu.Lock()
	p.queries[qs] = true
	p.mu.Unlock()
	fail := func(status int, err error) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()})
	}
	now := time.Now()
	q, err := p.engine.NewInstantQuery(r.Context(), p.storage, nil, qs, now)
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	defer q.Close()
	res := q.Exec(r.Context())
	if res.Err != nil {
		fail(http.StatusUnprocessableEntity, res.Err)
		return
	}
	sample := func(t int64, v float64) []any {
		return []any{float64(t) / 1000, strconv.FormatFloat(v, 'f', -1, 64)}
	}
	data := map[string]any{}
	switch v := res.Value.(type) {
	case promql.Vector:
		result := []any{}
		for _, s := range v {
			result = append(result, map[string]any{"metric": s.Metric.Map(), "value": sample(s.T, s.F)})
		}
		data["resultType"], data["result"] = "vector", result
	case promql.Scalar:
		data["resultType"], data["result"] = "scalar", sample(v.T, v.V)
	default:
		fail(http.StatusBadRequest, res.Err)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
}

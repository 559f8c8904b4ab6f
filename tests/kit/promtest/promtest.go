// SPDX-License-Identifier: Apache-2.0

// Package promtest serves Prometheus' HTTP query API (instant and range queries) on loopback over
// series a test appends, evaluated by Prometheus' own PromQL engine: what a test of a query's
// reader (the dashboards' panels, the status' load, the monitoring picture) runs against, without
// a Prometheus process (tests only).
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"
)

// Server is the API on loopback until the test ends.
type Server struct {
	URL     string
	storage *teststorage.TestStorage
	engine  *promql.Engine

	mu      sync.Mutex
	queries []string
}

// New serves an empty Prometheus until the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	storage, err := teststorage.NewWithError()
	require.NoError(t, err)
	s := &Server{storage: storage,
		engine: promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute})}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", s.instant)
	mux.HandleFunc("/api/v1/query_range", s.ranged)
	server := httptest.NewServer(mux)
	t.Cleanup(func() { server.Close(); _ = storage.Close() })
	s.URL = server.URL
	return s
}

// Append records a sample of the series named by the labels (__name__ among them) at a time.
func (s *Server) Append(t testing.TB, series map[string]string, at time.Time, value float64) {
	t.Helper()
	app := s.storage.Appender(context.Background())
	_, err := app.Append(0, labels.FromMap(series), at.UnixMilli(), value)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
}

// Queries are the queries asked, in order.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

func (s *Server) asked(q string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, q)
}

// instant answers GET or POST /api/v1/query as Prometheus does (web/api/v1/api.go, query), at
// the time given or now, for vector and scalar results.
func (s *Server) instant(w http.ResponseWriter, r *http.Request) {
	qs := r.FormValue("query")
	s.asked(qs)
	at := time.Now()
	if v := r.FormValue("time"); v != "" {
		var err error
		if at, err = parseTime(v); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
	}
	value, ok := run(w, r, func() (promql.Query, error) { return s.engine.NewInstantQuery(r.Context(), s.storage, nil, qs, at) })
	if !ok {
		return
	}
	data := map[string]any{}
	switch v := value.(type) {
	case promql.Vector:
		result := []any{}
		for _, smp := range v {
			result = append(result, map[string]any{"metric": smp.Metric.Map(), "value": sample(smp.T, smp.F)})
		}
		data["resultType"], data["result"] = "vector", result
	case promql.Scalar:
		data["resultType"], data["result"] = "scalar", sample(v.T, v.V)
	default:
		fail(w, http.StatusBadRequest, fmt.Errorf("a %s result is not served here", value.Type()))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
}

// ranged answers /api/v1/query_range as Prometheus does (web/api/v1/api.go, queryRange): a matrix.
func (s *Server) ranged(w http.ResponseWriter, r *http.Request) {
	qs := r.FormValue("query")
	s.asked(qs)
	start, err := parseTime(r.FormValue("start"))
	if err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("start: %v", err))
		return
	}
	end, err := parseTime(r.FormValue("end"))
	if err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("end: %v", err))
		return
	}
	step, err := strconv.ParseFloat(r.FormValue("step"), 64)
	if err != nil || step <= 0 {
		fail(w, http.StatusBadRequest, fmt.Errorf("step %q: a positive number of seconds", r.FormValue("step")))
		return
	}
	value, ok := run(w, r, func() (promql.Query, error) {
		return s.engine.NewRangeQuery(r.Context(), s.storage, nil, qs, start, end, time.Duration(step*float64(time.Second)))
	})
	if !ok {
		return
	}
	matrix, ok := value.(promql.Matrix)
	if !ok {
		fail(w, http.StatusBadRequest, fmt.Errorf("a %s result is not a matrix", value.Type()))
		return
	}
	result := []any{}
	for _, series := range matrix {
		var values []any
		for _, p := range series.Floats {
			values = append(values, sample(p.T, p.F))
		}
		result = append(result, map[string]any{"metric": series.Metric.Map(), "values": values})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
}

// run makes and executes a query, answering as Prometheus does when it cannot: 400 for a query
// that does not parse, 422 for one that fails to run (web/api/v1/api.go, returnAPIError).
func run(w http.ResponseWriter, r *http.Request, newQuery func() (promql.Query, error)) (parser.Value, bool) {
	q, err := newQuery()
	if err != nil {
		fail(w, http.StatusBadRequest, err)
		return nil, false
	}
	defer q.Close()
	res := q.Exec(r.Context())
	if res.Err != nil {
		fail(w, http.StatusUnprocessableEntity, res.Err)
		return nil, false
	}
	return res.Value, true
}

// sample is [seconds, "value"], as Prometheus' API writes a sample.
func sample(ms int64, v float64) []any {
	return []any{float64(ms) / 1000, strconv.FormatFloat(v, 'f', -1, 64)}
}

// parseTime reads Prometheus' API time: seconds since the epoch, fractions allowed, or RFC 3339.
func parseTime(v string) (time.Time, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.Parse(time.RFC3339Nano, v)
}

func fail(w http.ResponseWriter, status int, err error) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()})
}

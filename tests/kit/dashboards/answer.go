// SPDX-License-Identifier: Apache-2.0

package dashboards

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/observe"
)

// answerInterval is the interval the queries are interpolated at: a dashboard's hour on a
// panel of about a thousand pixels, as Grafana would compute it.
const answerInterval = 15 * time.Second

// PanelsAnswer asks a Prometheus (its HTTP API at promURL) every query of every panel of every
// dashboard (their JSON, as Of gives them) as an instant query, now, variables substituted as
// Grafana does, and fails, naming the dashboard, the panel's title and the query, for each one
// that returns no series or that the Prometheus refuses. Call it after traffic: a rate needs two
// scrapes, a histogram's quantile a request. A query naming one of unserved (metric names no
// exporter of the Prometheus serves, such as kube-state-metrics' in a cluster without it) is not
// asked: it is logged, so a test says what it leaves out.
func PanelsAnswer(t testing.TB, promURL string, dashboards []string, unserved ...string) {
	t.Helper()
	if len(dashboards) == 0 {
		t.Errorf("no dashboard to ask %s of", promURL)
	}
	for _, d := range dashboards {
		panels, err := Panels(d, answerInterval)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, p := range panels {
			if len(p.Queries) == 0 {
				t.Errorf("dashboard %q, panel %q: no query", p.Dashboard, p.Title)
			}
			for _, q := range p.Queries {
				if metric := namesOneOf(q.Expr, unserved); metric != "" {
					t.Logf("dashboard %q, panel %q: the query %s not asked: nothing here serves %s", p.Dashboard, p.Title, q.Expr, metric)
					continue
				}
				samples, err := observe.InstantQuery(context.Background(), http.DefaultClient, promURL, q.Expr)
				switch {
				case err != nil:
					t.Errorf("dashboard %q, panel %q: the query %s: %v", p.Dashboard, p.Title, q.Expr, err)
				case len(samples) == 0:
					t.Errorf("dashboard %q, panel %q: the query %s returns no series", p.Dashboard, p.Title, q.Expr)
				}
			}
		}
	}
}

// namesOneOf is the first of metrics that expr reads, or "".
func namesOneOf(expr string, metrics []string) string {
	for _, m := range metrics {
		if regexp.MustCompile(`(^|[^a-zA-Z0-9_:])` + regexp.QuoteMeta(m) + `([^a-zA-Z0-9_:]|$)`).MatchString(expr) {
			return m
		}
	}
	return ""
}

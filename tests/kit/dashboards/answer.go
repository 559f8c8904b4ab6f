// SPDX-License-Identifier: Apache-2.0

package dashboards

import (
	"context"
	"net/http"
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
// scrapes, a histogram's quantile a request.
func PanelsAnswer(t testing.TB, promURL string, dashboards []string) {
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

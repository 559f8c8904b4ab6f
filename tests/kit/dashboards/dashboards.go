// SPDX-License-Identifier: Apache-2.0

// Package dashboards reads the Grafana dashboards the render writes as Grafana reads them (their
// panels and each panel's Prometheus queries, template variables substituted), checks that
// every query answers from a Prometheus (PanelsAnswer), and draws the panels from a Prometheus'
// range queries (Draw, for docs/monitoring.md's picture) (tests only).
package dashboards

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// Of are the dashboards of a rendered service: the JSON of each ConfigMap the Grafana chart's
// sidecar loads (render.GrafanaDashboardLabel).
func Of(tree *render.Tree) []string {
	var out []string
	for _, o := range tree.Objects {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok && cm.Labels[render.GrafanaDashboardLabel] != "" {
			for _, v := range cm.Data {
				out = append(out, v)
			}
		}
	}
	return out
}

// Panel is a dashboard's panel: its title, unit and queries.
type Panel struct {
	Dashboard string
	Title     string
	Unit      string
	Queries   []Query
}

// Query is one of a panel's Prometheus queries, its template variables substituted, and the
// legend of its series.
type Query struct {
	Expr   string
	Legend string
}

// dashboardJSON is the part of Grafana's dashboard model a panel's queries are read from.
type dashboardJSON struct {
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name    string `json:"name"`
			Current struct {
				Value any `json:"value"`
			} `json:"current"`
			Query any `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panelJSON `json:"panels"`
}

type panelJSON struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		Hide         bool   `json:"hide"`
	} `json:"targets"`
	// Panels are a collapsed row's.
	Panels []panelJSON `json:"panels"`
}

// Panels are a dashboard's panels with their queries, each query's variables substituted as
// Grafana does before it sends the query (Interpolate) at the given interval ($__interval);
// a row is no panel, its collapsed panels are; hidden queries are not sent, so not read.
func Panels(dashboard string, interval time.Duration) ([]Panel, error) {
	var d dashboardJSON
	if err := json.Unmarshal([]byte(dashboard), &d); err != nil {
		return nil, fmt.Errorf("not a Grafana dashboard: %v", err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		switch value := v.Current.Value.(type) {
		case string:
			vars[v.Name] = value
		case []any: // a multi-value variable: its first value, as a single selection would send
			if len(value) > 0 {
				vars[v.Name] = fmt.Sprint(value[0])
			}
		default:
			if q, ok := v.Query.(string); ok { // a constant's value is its query
				vars[v.Name] = q
			}
		}
	}
	var out []Panel
	var walk func(ps []panelJSON) error
	walk = func(ps []panelJSON) error {
		for _, p := range ps {
			if p.Type == "row" {
				if err := walk(p.Panels); err != nil {
					return err
				}
				continue
			}
			panel := Panel{Dashboard: d.Title, Title: p.Title, Unit: p.FieldConfig.Defaults.Unit}
			for _, t := range p.Targets {
				if t.Hide {
					continue
				}
				expr, err := Interpolate(t.Expr, vars, interval)
				if err != nil {
					return fmt.Errorf("panel %q: %v", p.Title, err)
				}
				panel.Queries = append(panel.Queries, Query{Expr: expr, Legend: t.LegendFormat})
			}
			out = append(out, panel)
		}
		return nil
	}
	return out, walk(d.Panels)
}

// variable is Grafana's syntax of a variable in a query: $name, ${name}, ${name:format} and the
// deprecated [[name]] or [[name:format]] (Grafana's docs, dashboards/variables/variable-syntax;
// public/app/features/variables/utils.ts, variableRegex).
var variable = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?::([^}]+))?\}`)

// scrapeInterval is Prometheus' default scrape_interval, which Grafana's Prometheus data source
// assumes when its own "scrape interval" is not set (15s).
const scrapeInterval = 15 * time.Second

// Interpolate substitutes a query's variables as Grafana does: the dashboard's variables by
// their current value (a single value, sent as it is), and Grafana's global ones for a query at
// interval: $__interval, $__rate_interval (max($__interval + scrape interval, 4 × scrape
// interval), Grafana's Prometheus data source docs), $__range and $__range_s (the interval
// too: one step is the range an instant query looks at). A variable Grafana would not know is an
// error: the panel would send it as it is, and Prometheus refuse it.
func Interpolate(expr string, vars map[string]string, interval time.Duration) (string, error) {
	globals := map[string]string{
		"__interval":      promDuration(interval),
		"__interval_ms":   strconv.FormatInt(interval.Milliseconds(), 10),
		"__rate_interval": promDuration(max(interval+scrapeInterval, 4*scrapeInterval)),
		"__range":         promDuration(interval),
		"__range_s":       strconv.FormatInt(int64(interval.Seconds()), 10),
	}
	var unknown []string
	out := variable.ReplaceAllStringFunc(expr, func(match string) string {
		m := variable.FindStringSubmatch(match)
		name := m[1] + m[2] + m[4]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := globals[name]; ok {
			return v
		}
		unknown = append(unknown, match)
		return match
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("the query %q names %v, which is no variable of the dashboard nor of Grafana", expr, unknown)
	}
	return out, nil
}

// promDuration is a duration as PromQL writes it, in whole seconds at least.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(int64(max(d, time.Second)/time.Second), 10) + "s"
}

// SPDX-License-Identifier: Apache-2.0

package dashboards

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// RangeSeries is one series of a range query: its labels and its points.
type RangeSeries struct {
	Labels map[string]string
	Points plotter.XYs // x: seconds since the epoch
}

// RangeQuery asks a Prometheus for a query's series from start to end at step (its HTTP API's
// /api/v1/query_range, https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries).
func RangeQuery(ctx context.Context, promURL, query string, start, end time.Time, step time.Duration) ([]RangeSeries, error) {
	form := url.Values{"query": {query}, "start": {unix(start)}, "end": {unix(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(promURL, "/")+"/api/v1/query_range", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the Prometheus at %s did not answer: %v", promURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("the answer of %s is not Prometheus' API (HTTP %d)", promURL, resp.StatusCode)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("the Prometheus at %s refused %s: %s", promURL, query, answer.Error)
	}
	var out []RangeSeries
	for _, r := range answer.Data.Result {
		s := RangeSeries{Labels: r.Metric}
		for _, v := range r.Values {
			t, ok := v[0].(float64)
			text, isText := v[1].(string)
			if !ok || !isText {
				return nil, fmt.Errorf("the Prometheus at %s: a sample %v is not [time, \"value\"]", promURL, v)
			}
			y, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return nil, err
			}
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				s.Points = append(s.Points, plotter.XY{X: t, Y: y})
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64) }

// unitWords say Grafana's units on an axis.
var unitWords = map[string]string{"percentunit": "fraction (0 to 1)", "s": "seconds", "short": ""}

// legendLabel is Grafana's {{label}} in a legend format.
var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// Legend is a series' name as Grafana writes it from a legend format: each {{label}} by the
// series' value of it.
func Legend(format string, labels map[string]string) string {
	if format == "" {
		var parts []string
		for k, v := range labels {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		return "{" + strings.Join(parts, ",") + "}"
	}
	return legendLabel.ReplaceAllStringFunc(format, func(m string) string {
		return labels[legendLabel.FindStringSubmatch(m)[1]]
	})
}

// Picture draws a dashboard's panels as Grafana lays them, two a row, each panel's queries' series
// from start to end (range queries of a Prometheus at promURL, at step), as a PNG. A panel none of
// whose queries returns a point is an error that names it: the picture would show an empty panel.
func Picture(ctx context.Context, promURL, dashboard string, start, end time.Time, step time.Duration) ([]byte, error) {
	panels, err := Panels(dashboard, step)
	if err != nil {
		return nil, err
	}
	const columns = 2
	rows := (len(panels) + columns - 1) / columns
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, columns)
	}
	var empty []string
	for i, panel := range panels {
		p := plot.New()
		p.Title.Text = panel.Title
		p.X.Tick.Marker = plot.TimeTicks{Format: "15:04"}
		p.Y.Label.Text = unitWords[panel.Unit]
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		lines := 0
		for _, q := range panel.Queries {
			series, err := RangeQuery(ctx, promURL, q.Expr, start, end, step)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %v", panel.Title, err)
			}
			for _, s := range series {
				if len(s.Points) == 0 {
					continue
				}
				line, err := plotter.NewLine(s.Points)
				if err != nil {
					return nil, fmt.Errorf("panel %q: %v", panel.Title, err)
				}
				line.Color = plotutil.Color(lines)
				line.Width = vg.Points(1.5)
				p.Add(line)
				p.Legend.Add(Legend(q.Legend, s.Labels), line)
				lines++
			}
		}
		if lines == 0 {
			empty = append(empty, fmt.Sprintf("%q", panel.Title))
		}
		p.Y.Min = min(p.Y.Min, 0) // from zero, as Grafana's panels of counts and fractions read
		if p.Y.Max <= p.Y.Min {
			p.Y.Max = p.Y.Min + 1
		}
		plots[i/columns][i%columns] = p
	}
	if len(empty) > 0 {
		return nil, fmt.Errorf("the Prometheus at %s has no points from %s to %s for the panels %s", promURL,
			start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), strings.Join(empty, ", "))
	}
	for _, row := range plots { // an odd panel out: its cell stays blank
		for j := range row {
			if row[j] == nil {
				row[j] = plot.New()
				row[j].HideAxes()
			}
		}
	}
	img := vgimg.New(vg.Length(columns)*6*vg.Inch, vg.Length(rows)*3*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: columns, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	var out bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// SPDX-License-Identifier: Apache-2.0

package dashboards_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/dashboards"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/promtest"
)

// TestPictureOfTheDashboard: every panel of llama-router's dashboard drawn from range queries of
// Prometheus' own PromQL engine, five rows of two; a panel with no points fails the picture,
// named. FUSIONINFER_WRITE_PICTURE=DIR writes it there to look at (it is not real data: the
// picture of docs/monitoring.md is drawn by make monitoring-picture from a scraping Prometheus).
func TestPictureOfTheDashboard(t *testing.T) {
	tree := llamaRouter(t)
	prom := promtest.New(t)
	scraped(t, prom, tree)
	board := dashboards.Of(tree)[0]
	end := time.Now()
	picture, err := dashboards.Picture(context.Background(), prom.URL, board, end.Add(-10*time.Minute), end, 15*time.Second)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(picture))
	require.NoError(t, err)
	assert.Equal(t, 2*6*96, img.Bounds().Dx(), "two panels a row, 6 inches at vgimg's 96 dpi")
	assert.Equal(t, 5*3*96, img.Bounds().Dy(), "nine panels: five rows")
	assert.Len(t, prom.Queries(), 16, "every query of every panel")
	if dir := os.Getenv("FUSIONINFER_WRITE_PICTURE"); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "monitoring-test.png"), picture, 0o644))
	}

	empty := promtest.New(t)
	scraped(t, empty, tree, "vllm:kv_cache_usage_perc")
	_, err = dashboards.Picture(context.Background(), empty.URL, board, end.Add(-10*time.Minute), end, 15*time.Second)
	assert.ErrorContains(t, err, `for the panels "KV-cache usage"`)
}

// TestLegendsAsGrafanaWritesThem: {{label}} by the series' value.
func TestLegendsAsGrafanaWritesThem(t *testing.T) {
	assert.Equal(t, "decode p95", dashboards.Legend("{{role}} p95", map[string]string{"role": "decode"}))
	assert.Equal(t, "{model_name=a,role=b}", dashboards.Legend("", map[string]string{"role": "b", "model_name": "a"}))
}

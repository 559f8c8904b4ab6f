// SPDX-License-Identifier: Apache-2.0

// Command monitoring-picture draws the main dashboard's panels (a manifest's service's Grafana
// dashboard, as the render writes it) from a Prometheus' range queries into a PNG: the picture of
// docs/monitoring.md (`make monitoring-picture PROMETHEUS=http://...`). It runs against the
// Prometheus that scraped the service, while it still holds the data.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/dashboards"
)

func main() {
	prometheus := flag.String("prometheus", "", "URL of the Prometheus that scraped the service (required)")
	manifest := flag.String("f", "examples/manifests/llama-router.yaml", "the service's manifest: its dashboard is drawn")
	since := flag.Duration("since", 30*time.Minute, "how far back the picture starts")
	step := flag.Duration("step", 15*time.Second, "the range queries' step")
	out := flag.String("o", "docs/images/monitoring.png", "the PNG to write")
	flag.Parse()
	if err := run(*prometheus, *manifest, *since, *step, *out); err != nil {
		fmt.Fprintln(os.Stderr, "monitoring-picture:", err)
		os.Exit(1)
	}
}

func run(prometheus, manifest string, since, step time.Duration, out string) error {
	if prometheus == "" {
		return fmt.Errorf("give -prometheus URL (make monitoring-picture PROMETHEUS=http://...)")
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	trees, _, problems := render.LoadManifest(manifest, data, nil)
	if len(problems) > 0 {
		return fmt.Errorf("%s: %v", manifest, problems)
	}
	for _, tree := range trees {
		boards := dashboards.Of(tree)
		if len(boards) == 0 {
			continue
		}
		end := time.Now()
		png, err := dashboards.Picture(context.Background(), prometheus, boards[0], end.Add(-since), end, step)
		if err != nil {
			return err
		}
		return os.WriteFile(out, png, 0o644)
	}
	return fmt.Errorf("%s: no service with monitoring.dashboard", manifest)
}

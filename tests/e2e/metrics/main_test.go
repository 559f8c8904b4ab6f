// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// Package metrics proves the scrape path on the simulated cluster with the pods' programs
// running: a real Prometheus (tests/cluster prometheus.go), configured from the rendered
// PodMonitors by prometheus-operator's own configuration generator, scrapes the model servers
// (llm-d-inference-sim, vLLM's metric names) and the Endpoint Picker; KEDA's real operator reads
// the scraped series and scales a role. What it proves and its figures: docs/monitoring.md and
// docs/autoscaling.md.
package metrics

import (
	"testing"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.MainWithMetrics(m) }

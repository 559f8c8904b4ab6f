// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// KubeStateMetricsVersion is the kube-state-metrics the metrics suite runs beside Prometheus: the
// module proxy serves v2.16.0 but the checksum database has no record of it, so v2.15.0.
const KubeStateMetricsVersion = "v2.15.0"

// kubeStateMetrics exports the objects' state as metrics: the dashboard's replicas panel reads
// its StatefulSet series (kube_statefulset_replicas, kube_statefulset_status_replicas_ready).
var kubeStateMetrics = binary{"kube-state-metrics", "kube-state-metrics", "k8s.io/kube-state-metrics/v2", KubeStateMetricsVersion}

// startKubeStateMetrics runs kube-state-metrics on loopback against the API server, exporting
// StatefulSets only (the dashboard reads nothing else of it), and writes the scrape job Prometheus
// gets beside the PodMonitors' (ScrapePodMonitors): a platform's Prometheus scrapes it through the
// ServiceMonitor its chart ships, with honorLabels so that each series keeps the namespace of the
// object it describes (kube-prometheus' kube-state-metrics ServiceMonitor); the exporter runs
// outside the cluster's pods here, so the job names its address.
func (c *Cluster) startKubeStateMetrics() error {
	program, err := kubeStateMetrics.build()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	telemetry, err := freePort()
	if err != nil {
		return err
	}
	address := fmt.Sprintf("127.0.0.1:%d", port)
	Progress("starting kube-state-metrics %s on %s", KubeStateMetricsVersion, address)
	if err := c.start("kube-state-metrics", program, "--kubeconfig", c.Kubeconfig, "--resources", "statefulsets",
		"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--telemetry-host", "127.0.0.1", "--telemetry-port", fmt.Sprint(telemetry)); err != nil {
		return err
	}
	if err := WaitFor(60*time.Second, func() error { return httpOK(http.DefaultClient, "http://"+address+"/healthz", "") }); err != nil {
		return fmt.Errorf("kube-state-metrics did not become ready: %w\n%s", err, c.LogTail("kube-state-metrics"))
	}
	job := fmt.Sprintf("- job_name: kube-state-metrics\n  honor_labels: true\n  static_configs:\n  - targets: [%q]\n", address)
	return os.WriteFile(c.additionalScrapeConfigs(), []byte(job), 0o644)
}

// additionalScrapeConfigs is the file of the jobs Prometheus scrapes beside the PodMonitors'.
func (c *Cluster) additionalScrapeConfigs() string {
	return filepath.Join(c.Dir, "prometheus", "additional-scrape-configs.yml")
}

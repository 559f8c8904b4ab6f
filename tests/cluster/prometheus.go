// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The versions of Prometheus and of the operator whose configuration generator configures it.
const (
	PrometheusVersion         = "v0.316.0" // Prometheus 3.16.0's Go module version
	PrometheusOperatorVersion = "v0.88.0"
)

var (
	// prometheusServer is Prometheus itself, built with only Kubernetes service discovery
	// (buildTags): the other discoveries' clouds' SDKs are most of its cold build.
	prometheusServer = binary{"prometheus", "prometheus", "github.com/prometheus/prometheus/cmd/prometheus", PrometheusVersion}
	// prometheusConfig is the program of the prometheus-operator wrapper module that writes
	// prometheus.yml from PodMonitors with the operator's own generator.
	prometheusConfig = binary{"prometheus-config", "prometheus-operator", "./cmd/prometheus-config", PrometheusOperatorVersion}
)

var podMonitors = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}

// startPrometheus runs Prometheus on loopback with no scrape configuration yet (ScrapePodMonitors
// gives it one) and its lifecycle API, which reloads the configuration, and kube-state-metrics,
// which a platform's Prometheus scrapes beside the pods.
func (c *Cluster) startPrometheus() error {
	server, err := prometheusServer.build()
	if err != nil {
		return err
	}
	if _, err := prometheusConfig.build(); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(c.Dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global: {scrape_interval: 5s}\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(c.Config.BearerToken), 0o600); err != nil {
		return err
	}
	c.PrometheusURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	Progress("starting Prometheus %s on %s", PrometheusVersion, c.PrometheusURL)
	if err := c.start("prometheus", server, "--config.file", config, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", port), "--web.enable-lifecycle"); err != nil {
		return err
	}
	if err := WaitFor(60*time.Second, func() error { return httpOK(http.DefaultClient, c.PrometheusURL+"/-/ready", "") }); err != nil {
		return fmt.Errorf("prometheus did not become ready: %w\n%s", err, c.LogTail("prometheus"))
	}
	return c.startKubeStateMetrics()
}

// ScrapePodMonitors configures Prometheus as prometheus-operator would for a Prometheus that
// selects every PodMonitor of the cluster now (the operator's generator, prometheusConfig), and
// has it load the configuration. The operator watches them; a test calls this after a deployment.
func (c *Cluster) ScrapePodMonitors(ctx context.Context) error {
	if c.PrometheusURL == "" {
		return fmt.Errorf("the cluster runs no Prometheus (Options.Prometheus)")
	}
	generator, err := prometheusConfig.build()
	if err != nil {
		return err
	}
	list, err := c.Dynamic.Resource(podMonitors).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	dir := filepath.Join(c.Dir, "prometheus")
	var stream strings.Builder
	for _, pm := range list.Items {
		data, err := json.Marshal(pm.Object)
		if err != nil {
			return err
		}
		stream.Write(data) // JSON objects one after the other: the generator's YAML-or-JSON decoder reads them
		stream.WriteString("\n")
	}
	podMonitorsFile := filepath.Join(dir, "podmonitors.json")
	if err := os.WriteFile(podMonitorsFile, []byte(stream.String()), 0o644); err != nil {
		return err
	}
	config := filepath.Join(dir, "prometheus.yml")
	out, err := exec.CommandContext(ctx, generator, "-podmonitors", podMonitorsFile, "-api-server", c.Config.Host,
		"-token-file", filepath.Join(dir, "token"), "-prometheus-version", "v3.16.0", "-scrape-interval", "5s",
		"-additional-scrape-configs", c.additionalScrapeConfigs(), "-out", config).CombinedOutput()
	if err != nil {
		return fmt.Errorf("prometheus-config: %v\n%s", err, out)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.PrometheusURL+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("prometheus refused the configuration of %d PodMonitors (%s): %s\n%s", len(list.Items), config, resp.Status, c.LogTail("prometheus"))
	}
	return nil
}

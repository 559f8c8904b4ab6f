// SPDX-License-Identifier: Apache-2.0

// Command prometheus-config writes the Prometheus configuration prometheus-operator would write
// for a Prometheus that selects the given PodMonitors: it calls the operator's own generator
// (pkg/prometheus ConfigGenerator.GenerateServerConfiguration, as the operator's
// pkg/prometheus/server operator.go createOrUpdateConfigurationSecret does), so what make e2e's
// Prometheus scrapes is what the operator would make it scrape, not our reading of its rules.
//
// The operator also filters PodMonitors it finds invalid (pkg/prometheus resource_selector.go
// SelectPodMonitors) and watches for changes; the harness regenerates after each deployment.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	"github.com/prometheus-operator/prometheus-operator/pkg/operator"
	prompkg "github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func main() {
	podMonitors := flag.String("podmonitors", "", "a YAML stream of PodMonitors")
	apiServer := flag.String("api-server", "", "the Kubernetes API server's URL, for kubernetes_sd and for secrets the PodMonitors name")
	tokenFile := flag.String("token-file", "", "a file holding a bearer token for the API server")
	version := flag.String("prometheus-version", "", "the Prometheus version the configuration is for")
	interval := flag.String("scrape-interval", "5s", "the Prometheus' scrapeInterval")
	additional := flag.String("additional-scrape-configs", "", "a file of scrape configurations to append, as the Prometheus' additionalScrapeConfigs Secret holds them")
	out := flag.String("out", "", "where to write prometheus.yml")
	flag.Parse()
	if err := run(*podMonitors, *apiServer, *tokenFile, *version, *interval, *additional, *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(podMonitorsFile, apiServer, tokenFile, version, interval, additionalFile, out string) error {
	pMons, err := readPodMonitors(podMonitorsFile)
	if err != nil {
		return err
	}
	// What a Prometheus' spec.additionalScrapeConfigs names: jobs the operator appends as they are
	// (kube-state-metrics' here, which runs outside the cluster's pods).
	var additional []byte
	if additionalFile != "" {
		if additional, err = os.ReadFile(additionalFile); err != nil {
			return err
		}
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return err
	}
	// The Prometheus object a user of the operator would write: every PodMonitor selected, the API
	// server reached with the given credentials (its apiserverConfig).
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e", Namespace: "monitoring"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			Version:        version,
			ScrapeInterval: monitoringv1.Duration(interval),
			// The operator's config reloader fills the replica label in from the pod's name; no
			// reloader runs here, and one Prometheus has no replica to tell apart.
			ReplicaExternalLabelName:    ptr.To(""),
			PodMonitorSelector:          &metav1.LabelSelector{},
			PodMonitorNamespaceSelector: &metav1.LabelSelector{},
			APIServerConfig: &monitoringv1.APIServerConfig{
				Host:          apiServer,
				Authorization: &monitoringv1.Authorization{CredentialsFile: tokenFile},
				TLSConfig:     &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptr.To(true)}},
			},
		},
			// The CRD's default, which the API server would have filled in.
			EvaluationInterval: "30s",
		},
	}
	cg, err := prompkg.NewConfigGenerator(slog.New(slog.NewTextHandler(os.Stderr, nil)), p)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(&rest.Config{Host: apiServer, BearerToken: string(bytes.TrimSpace(token)),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		return err
	}
	store := assets.NewStoreBuilder(client.CoreV1(), client.CoreV1())
	// The generator reads secrets from the store only (assets cacheOnlyStore): the operator loads
	// each endpoint's authorization Secret into it first (pkg/prometheus resource_selector.go
	// SelectPodMonitors: store.AddSafeAuthorizationCredentials), and so does this program.
	for key, pm := range pMons {
		for i, ep := range pm.Spec.PodMetricsEndpoints {
			if err := store.AddSafeAuthorizationCredentials(context.Background(), pm.Namespace, ep.Authorization); err != nil {
				return fmt.Errorf("PodMonitor %s, endpoint %d: %w", key, i, err)
			}
		}
	}
	cfg, err := cg.GenerateServerConfiguration(p, nil, pMons, nil, nil, store, additional, nil, nil, nil)
	if err != nil {
		return err
	}
	expanded, err := expandReloaderVariables(cfg, map[string]string{operator.ShardEnvVar: "0"})
	if err != nil {
		return err
	}
	return os.WriteFile(out, expanded, 0o644)
}

// reloaderVariable is a $(NAME) reference the generator leaves for the config reloader.
var reloaderVariable = regexp.MustCompile(`\$\(([a-zA-Z_0-9]+)\)`)

// expandReloaderVariables does what the operator's config reloader (cmd/prometheus-config-reloader,
// thanos' pkg/reloader) does to the generated file before Prometheus reads it: $(NAME) becomes the
// reloader container's variable NAME, which the operator sets (pkg/operator config_reloader.go
// CreateConfigReloader: SHARD, the Prometheus shard; POD_NAME). Without it the sharding rule's
// `$(SHARD);` keeps no target. A name not in env is an error, as it is for the reloader.
func expandReloaderVariables(cfg []byte, env map[string]string) ([]byte, error) {
	var missing []string
	out := reloaderVariable.ReplaceAllFunc(cfg, func(ref []byte) []byte {
		name := string(reloaderVariable.FindSubmatch(ref)[1])
		value, ok := env[name]
		if !ok {
			missing = append(missing, name)
		}
		return []byte(value)
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("the configuration names reloader variables this program does not set: %v", missing)
	}
	return out, nil
}

// readPodMonitors decodes the stream, keyed namespace/name as the operator keys them.
func readPodMonitors(path string) (map[string]*monitoringv1.PodMonitor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	out := map[string]*monitoringv1.PodMonitor{}
	for {
		var pm monitoringv1.PodMonitor
		if err := decoder.Decode(&pm); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if pm.Name == "" {
			continue
		}
		out[pm.Namespace+"/"+pm.Name] = &pm
	}
}

// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// startLeaderWorkerSet runs LWS's controller manager with its webhooks: its own certificate
// management off, the webhooks served on 127.0.0.1 with a certificate of our CA, and LWS's webhook
// configurations pointed at that URL. The pod webhook is what gives LWS pods their group labels
// and leader address. fromPlatform: the CRDs, RBAC, configuration and webhook configurations are
// the Platform's (installPlatform), and the controller runs as the Platform's ServiceAccount;
// else (another version) LWS's CRDs and webhook manifests (config/webhook, with their kustomize
// patches) come from its module, and it runs as the admin.
func (c *Cluster) startLeaderWorkerSet(ctx context.Context, version string, fromPlatform bool) error {
	lws, ok := lwsControllers[version]
	if !ok {
		return fmt.Errorf("no LeaderWorkerSet %s: one of %v", version, slices.Sorted(maps.Keys(lwsControllers)))
	}
	controller, err := lws.build()
	if err != nil {
		return err
	}
	kubeconfig, config := c.Kubeconfig, map[string]any{"apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration"}
	if fromPlatform {
		if kubeconfig, err = c.serviceAccountKubeconfig(platform.LeaderWorkerSetNamespace, "lws-controller-manager"); err != nil {
			return err
		}
		text, err := c.platformConfig(ctx, platform.LeaderWorkerSetNamespace, platform.LeaderWorkerSetConfigMap, platform.LeaderWorkerSetConfigKey)
		if err != nil {
			return err
		}
		if err := yaml.Unmarshal([]byte(text), &config); err != nil {
			return fmt.Errorf("the Platform's LWS configuration: %w", err)
		}
	} else if err := c.installModuleCRDs(ctx, lws.module, "sigs.k8s.io/lws", "config/crd/bases"); err != nil {
		return err
	}
	webhookPort, err1 := freePort()
	healthPort, err2 := freePort()
	if err1 != nil || err2 != nil {
		return fmt.Errorf("no free port: %v %v", err1, err2)
	}
	certDir := filepath.Join(c.Dir, "lws-certs")
	caPEM, err := writeServingCertificate(certDir)
	if err != nil {
		return err
	}
	// What running as a process on loopback changes in the configuration; the rest (its gang
	// scheduling off, among others) is the Platform's.
	config["leaderElection"] = map[string]any{"leaderElect": false}
	config["internalCertManagement"] = map[string]any{"enable": false}
	config["webhook"] = map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir}
	config["metrics"] = map[string]any{"bindAddress": "0"}
	config["health"] = map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)}
	data, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	configFile := filepath.Join(c.Dir, "lws-config.yaml")
	if err := os.WriteFile(configFile, data, 0o600); err != nil {
		return err
	}
	Progress("starting the LeaderWorkerSet controller %s (webhooks on 127.0.0.1:%d)", version, webhookPort)
	if err := c.start("lws-controller", controller, "--config", configFile, "--kubeconfig", kubeconfig, "--zap-devel=false"); err != nil {
		return err
	}
	webhookURL := fmt.Sprintf("https://127.0.0.1:%d", webhookPort)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := WaitFor(60*time.Second, func() error {
		if err := httpOK(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), ""); err != nil {
			return err
		}
		_, err := insecure.Get(webhookURL) // any answer: the webhook server is listening
		return err
	}); err != nil {
		return fmt.Errorf("the LWS controller did not become ready: %w\n%s", err, c.LogTail("lws-controller"))
	}
	if fromPlatform {
		return c.installLeaderWorkerSetWebhooks(ctx, webhookURL, caPEM)
	}
	return c.installWebhooks(ctx, lws.module, webhookURL, caPEM)
}

var webhookResources = map[string]schema.GroupVersionResource{
	"MutatingWebhookConfiguration":   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	"ValidatingWebhookConfiguration": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
}

// installWebhooks creates LWS's webhook configurations from config/webhook in its module, with
// the kustomize patches it applies there, calling url instead of the in-cluster Service.
func (c *Cluster) installWebhooks(ctx context.Context, module, url string, caPEM []byte) error {
	dir, err := moduleFile(module, "sigs.k8s.io/lws", "config/webhook")
	if err != nil {
		return err
	}
	manifests, err := ReadObjects(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return err
	}
	patches := map[string]string{"MutatingWebhookConfiguration": "mutating-patch.yaml", "ValidatingWebhookConfiguration": "validating-patch.yaml"}
	for _, config := range manifests {
		webhooks, _, _ := unstructured.NestedSlice(config.Object, "webhooks")
		if err := applyWebhookPatch(webhooks, filepath.Join(dir, patches[config.GetKind()])); err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(config.Object, webhooks, "webhooks"); err != nil {
			return err
		}
		config.SetName("lws-" + config.GetName())
	}
	return c.createWebhooks(ctx, manifests, url, caPEM)
}

// createWebhooks creates webhook configurations, each webhook calling url (with its service's
// path) with caPEM instead of its in-cluster Service.
func (c *Cluster) createWebhooks(ctx context.Context, configs []*unstructured.Unstructured, url string, caPEM []byte) error {
	for _, config := range configs {
		webhooks, _, _ := unstructured.NestedSlice(config.Object, "webhooks")
		for _, w := range webhooks {
			webhook := w.(map[string]any)
			path, _, _ := unstructured.NestedString(webhook, "clientConfig", "service", "path")
			webhook["clientConfig"] = map[string]any{"url": url + path, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
		}
		if err := unstructured.SetNestedSlice(config.Object, webhooks, "webhooks"); err != nil {
			return err
		}
		if _, err := c.Dynamic.Resource(webhookResources[config.GetKind()]).Create(ctx, config, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", config.GetName(), err)
		}
	}
	return nil
}

// applyWebhookPatch applies a kustomize JSON patch of the form LWS uses (replace /webhooks/{i}).
func applyWebhookPatch(webhooks []any, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var ops []struct {
		Op    string         `json:"op"`
		Path  string         `json:"path"`
		Value map[string]any `json:"value"`
	}
	if err := yaml.Unmarshal(data, &ops); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, op := range ops {
		index, err := strconv.Atoi(strings.TrimPrefix(op.Path, "/webhooks/"))
		if op.Op != "replace" || err != nil || index >= len(webhooks) {
			return fmt.Errorf("%s: %s %s is not a patch this harness applies", path, op.Op, op.Path)
		}
		webhooks[index] = op.Value
	}
	return nil
}

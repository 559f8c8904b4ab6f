// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// kedaNamespace is where KEDA's operator and metrics server say they run (POD_NAMESPACE).
const kedaNamespace = platform.KEDANamespace

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// startKEDA runs KEDA's operator and its metrics server as KEDA's chart deploys them, but as
// processes on loopback: the operator evaluates each ScaledObject's scalers and serves their values
// over mutual TLS (gRPC) to the metrics server, which the API server's aggregation layer calls for
// external.metrics.k8s.io (an ExternalName Service pointing at 127.0.0.1). Certificates are ours,
// not the operator's own rotation: it would patch an in-cluster Secret and Service that do not exist.
func (c *Cluster) startKEDA(ctx context.Context) error {
	operator, err := kedaOperator.build()
	if err != nil {
		return err
	}
	adapter, err := kedaAdapter.build()
	if err != nil {
		return err
	}
	// The CRDs, the namespace and the RBAC are the Platform's (installPlatform); both run as its
	// ServiceAccount keda-operator, as KEDA's manifest runs them.
	kubeconfig, err := c.serviceAccountKubeconfig(platform.KEDANamespace, "keda-operator")
	if err != nil {
		return err
	}
	if _, err := c.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kedaNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	certDir := filepath.Join(c.Dir, "keda-certs")
	service := "keda-metrics-apiserver"
	caPEM, err := writeServingCertificate(certDir, "localhost", service+"."+kedaNamespace+".svc")
	if err != nil {
		return err
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return err
		}
	}
	grpcPort, healthPort, securePort, adapterMetricsPort := ports[0], ports[1], ports[2], ports[3]
	env := []string{"KUBECONFIG=" + kubeconfig, "WATCH_NAMESPACE=", "POD_NAMESPACE=" + kedaNamespace,
		"KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNamespace}
	Progress("starting KEDA %s: keda-operator and keda-adapter (external metrics on 127.0.0.1:%d)", KEDAVersion, securePort)
	if err := c.startWithEnv("keda-operator", operator, env,
		"--leader-elect=false", "--enable-cert-rotation=false", "--cert-dir", certDir,
		"--metrics-bind-address=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort),
		fmt.Sprintf("--metrics-service-bind-address=127.0.0.1:%d", grpcPort)); err != nil {
		return err
	}
	if err := c.startWithEnv("keda-adapter", adapter, env,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", securePort), "--cert-dir", certDir,
		"--tls-cert-file", filepath.Join(certDir, "tls.crt"), "--tls-private-key-file", filepath.Join(certDir, "tls.key"),
		"--lister-kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		fmt.Sprintf("--metrics-service-address=127.0.0.1:%d", grpcPort), fmt.Sprintf("--port=%d", adapterMetricsPort)); err != nil {
		return err
	}
	if err := WaitFor(60*time.Second, func() error {
		return httpOK(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), "")
	}); err != nil {
		return fmt.Errorf("keda-operator did not become ready: %w\n%s", err, c.LogTail("keda-operator"))
	}
	return c.registerExternalMetrics(ctx, service, securePort, caPEM)
}

// registerExternalMetrics points external.metrics.k8s.io at KEDA's metrics server and waits until
// the API server reaches it.
func (c *Cluster) registerExternalMetrics(ctx context.Context, service string, port int, caPEM []byte) error {
	// The aggregator resolves an ExternalName Service to its name and the APIService's port.
	if _, err := c.Clientset.CoreV1().Services(kedaNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1"},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.external.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "external.metrics.k8s.io", "version": "v1beta1",
			"service":  map[string]any{"namespace": kedaNamespace, "name": service, "port": int64(port)},
			"caBundle": base64.StdEncoding.EncodeToString(caPEM), "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	if _, err := c.Dynamic.Resource(apiServices).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return err
	}
	return WaitFor(90*time.Second, func() error {
		got, err := c.Dynamic.Resource(apiServices).Get(ctx, "v1beta1.external.metrics.k8s.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conditions {
			if m := cond.(map[string]any); m["type"] == "Available" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("the external metrics APIService is not Available: %v\n%s", conditions, c.LogTail("keda-adapter"))
	})
}

// startWithEnv is start with extra environment variables.
func (c *Cluster) startWithEnv(name, path string, env []string, args ...string) error {
	return c.startCommand(name, exec.Command(path, args...), append(os.Environ(), env...))
}

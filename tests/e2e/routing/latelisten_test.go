// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// loadTime is how long after its container starts a server of this test listens: vLLM loading
// its model.
const loadTime = 20 * time.Second

// A model server whose template gives no readiness probe gets the rendered one (GET /health on
// its port, core/render serverpod.go): while its server loads the model (it listens loadTime
// after its container starts, testcluster.ListenAfterAnnotation) the pod is Running and not
// Ready, the round-robin Endpoint Picker sends it nothing and every request goes to the other
// replica; once it listens, it serves. A second replica is added as KEDA would (the elastic LWS
// scaled), under a steady load.
func TestAServerGetsNoRequestBeforeItListens(t *testing.T) {
	const namespace = "routing-late-listen"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "late", Count: 2, GPUs: 8})
	args := service(namespace, 1, roundRobinRouter())
	args.Monitoring = &api.Monitoring{PrometheusAddress: "http://prometheus.monitoring:9090"} // KEDA's source; KEDA does not run here
	args.Roles[0].Autoscaling = &api.Autoscaling{MinReplicas: ptrTo(1), MaxReplicas: 2, Metric: api.MetricRequestsWaiting, Target: 4}
	args.Roles[0].Template = serverWithoutReadinessProbe(map[string]string{testcluster.ListenAfterAnnotation: loadTime.String()})
	r := deploy(t, "chat", args)
	base := pods(t, namespace, "chat", "server")
	require.Len(t, base, 1)
	assert.NotNil(t, base[0].Spec.Containers[0].ReadinessProbe, "the server has the rendered readiness probe")
	baseEndpoint := net.JoinHostPort(base[0].Status.PodIP, "8000")

	traffic := startLoad(r.gateway.URL, 4, 4, 50*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: how is the sea today?", i) })
	scaleElastic(t, namespace, "chat-server-elastic", 1)
	late, running := waitForPod(t, namespace, "chat-server-elastic-0", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
	})
	process, err := harness.Cluster.ContainerProcess(context.Background(), namespace, late.Name, "vllm")
	require.NoError(t, err)
	require.Equal(t, loadTime, process.ListenAfter, "the suite runs the late server")
	var listening time.Time
	require.Eventually(t, func() bool {
		var ok bool
		listening, ok = process.ListeningAt()
		return ok
	}, 2*time.Minute, 100*time.Millisecond, "the late server listens")
	waitForPod(t, namespace, late.Name, func(p *corev1.Pod) bool { return rolestatus.PodReady(p) })
	time.Sleep(5 * time.Second)
	requests := traffic.end()
	records := r.gateway.Records()

	ready, ok := process.ReadyAt()
	require.True(t, ok, "the late server's pod was reported Ready")
	lateEndpoint := net.JoinHostPort(late.Status.PodIP, "8000")
	var toBaseMeanwhile, toLateAfter int
	var early []string // requests routed to the late server before it listened
	for _, rec := range records {
		assert.False(t, rec.Lost(), "request %s was not lost: %s", rec.ID, rec.Err)
		if slices.Contains(rec.Picked, lateEndpoint) && rec.RoutedAt.Before(listening) {
			early = append(early, fmt.Sprintf("%s at %s: %s", rec.ID, rec.RoutedAt.Format("15:04:05.000"), rec.Err))
		}
		switch {
		case rec.Served == baseEndpoint && rec.Completed && rec.RoutedAt.After(process.Started) && rec.RoutedAt.Before(listening):
			toBaseMeanwhile++
		case rec.Served == lateEndpoint && rec.Completed:
			toLateAfter++
		}
	}
	assert.Empty(t, early, "requests were routed to %s before its server listened (%s): %d of %d, the first: %s",
		late.Name, listening.Format("15:04:05.000"), len(early), len(records), strings.Join(early[:min(len(early), 1)], ""))
	failed := failures(requests)
	assert.Empty(t, failed, "no request failed while the late server loaded: %d of %d did", len(failed), len(requests))
	assert.Positive(t, toBaseMeanwhile, "requests went to the other replica while the late server loaded")
	assert.Positive(t, toLateAfter, "the late server serves once it listens")
	// the probe that made it Ready reached the server, so it listened then; the suite sees a port
	// listen up to a poll late (CI, 2026-11-29: Ready 5 ms before the suite saw it listen)
	assert.False(t, ready.Before(listening.Add(-testcluster.ListeningPollInterval)),
		"the late pod was Ready (%s) only once its server listened (%s, seen up to %s late)", ready, listening, testcluster.ListeningPollInterval)
	testcluster.Progress("late server: Running at +0, its container run at +%s, listening at +%s, Ready at +%s; "+
		"%d requests to the other replica meanwhile, %d to it after, %d before it listened; %d requests in all",
		process.Started.Sub(running).Round(time.Millisecond), listening.Sub(running).Round(time.Millisecond),
		ready.Sub(running).Round(time.Millisecond), toBaseMeanwhile, toLateAfter, len(early), len(records))
}

// serverWithoutReadinessProbe is server with no readiness probe of its own: the render gives it one.
func serverWithoutReadinessProbe(annotations map[string]string) k8scorev1.PodTemplateSpecInput {
	template := server(annotations).(*k8scorev1.PodTemplateSpecArgs)
	template.Spec.(*k8scorev1.PodSpecArgs).Containers.(k8scorev1.ContainerArray)[0].(*k8scorev1.ContainerArgs).ReadinessProbe = nil
	return template
}

// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// Under a steady load through the gateway, an autoscaled replica gets traffic once it is Ready
// and none after it leaves, and a deleted pod gets nothing a measured time after its deletion; no
// request is lost on the way. The elastic LWS is scaled directly, as KEDA would (tests/e2e/autoscaling
// proves KEDA does): what is proved here is the routing.
func TestReplicasGetTrafficOnlyWhileTheyServe(t *testing.T) {
	const namespace = "routing-replicas"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "replicas", Count: 2, GPUs: 8})
	args := service(namespace, 2, router("queue-size"))
	args.Monitoring = &api.Monitoring{PrometheusAddress: "http://prometheus.monitoring:9090"} // KEDA's source; KEDA does not run here
	args.Roles[0].Autoscaling = &api.Autoscaling{MinReplicas: ptrTo(2), MaxReplicas: 3, Metric: api.MetricRequestsWaiting, Target: 4}
	// The elastic replica's model takes 3 s to load: it is Running and not Ready until then.
	args.Roles[0].Template = server(map[string]string{testcluster.ReadyAfterAnnotation: "3s"})
	r := deploy(t, "chat", args)
	elastic := "chat-server-elastic"

	traffic := startLoad(r.gateway.URL, 4, 8, 50*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: what is the weather like?", i) })
	time.Sleep(3 * time.Second)

	// One elastic replica: it serves once Ready, never before.
	scaled := time.Now()
	scaleElastic(t, namespace, elastic, 1)
	newPod, _ := waitForPod(t, namespace, elastic+"-0", func(p *corev1.Pod) bool { return rolestatus.PodReady(p) })
	time.Sleep(5 * time.Second)

	// It goes again.
	scaleElastic(t, namespace, elastic, 0)
	left := time.Now()
	waitForPodGone(t, namespace, newPod.Name, newPod.UID)
	time.Sleep(3 * time.Second)

	// A base replica's pod is deleted; its LWS makes it again.
	victim := pods(t, namespace, "chat", "server")[0]
	deleted := time.Now()
	require.NoError(t, harness.Cluster.Clientset.CoreV1().Pods(namespace).Delete(context.Background(), victim.Name, metav1.DeleteOptions{}))
	waitForPodGone(t, namespace, victim.Name, victim.UID)
	again, againReady := waitForPod(t, namespace, victim.Name, func(p *corev1.Pod) bool { return p.UID != victim.UID && rolestatus.PodReady(p) })
	time.Sleep(3 * time.Second)
	requests := traffic.end()
	records := r.gateway.Records()

	assert.Empty(t, failures(requests), "no request failed while replicas came and went")
	for _, rec := range records {
		assert.False(t, rec.Lost(), "request %s was not lost: %s", rec.ID, rec.Err)
	}
	elasticEndpoint := net.JoinHostPort(newPod.Status.PodIP, "8000")
	first, last := routedWindow(records, func(rec gateway.Record) bool { return rec.Served == elasticEndpoint && rec.Pod == newPod.Name })
	require.False(t, first.IsZero(), "the elastic replica served")
	process, err := harness.Cluster.ContainerProcess(context.Background(), namespace, newPod.Name, "vllm")
	require.NoError(t, err)
	ready, ok := process.ReadyAt()
	require.True(t, ok)
	assert.False(t, first.Before(ready), "the elastic replica got nothing before it was Ready (%s): first at %s", ready, first)
	testcluster.Progress("elastic replica: scaled at +0, Ready at +%s, first request %s later; scaled down at +%s, last request picked at %s after",
		ready.Sub(scaled).Round(time.Millisecond), first.Sub(ready).Round(time.Millisecond), left.Sub(scaled).Round(time.Millisecond),
		last.Sub(left).Round(time.Millisecond))
	assert.Less(t, last.Sub(left), time.Second, "the elastic replica got nothing a second after it was scaled away")

	victimEndpoint := net.JoinHostPort(victim.Status.PodIP, "8000")
	// kwok may give the successor the victim's address: a request to it is the victim's only if it
	// began before the successor's server started (the victim's had ended by then: its pod was gone)
	successor, err := harness.Cluster.ContainerProcess(context.Background(), namespace, again.Name, "vllm")
	require.NoError(t, err)
	_, lastToVictim := routedWindow(records, func(rec gateway.Record) bool {
		return rec.Served == victimEndpoint && rec.Start.Before(successor.Started) && rec.Start.After(deleted.Add(-30*time.Second))
	})
	require.False(t, lastToVictim.IsZero(), "the victim served before its deletion (else nothing after it proves nothing)")
	testcluster.Progress("deleted pod %s: last request picked %s after its deletion; its successor seen Ready %s after",
		victim.Name, lastToVictim.Sub(deleted).Round(time.Millisecond), againReady.Sub(deleted).Round(time.Millisecond))
	assert.Less(t, lastToVictim.Sub(deleted), time.Second, "the deleted pod got nothing a second after its deletion")
	againEndpoint := net.JoinHostPort(again.Status.PodIP, "8000")
	firstToAgain, _ := routedWindow(records, func(rec gateway.Record) bool {
		return rec.Served == againEndpoint && rec.Pod == again.Name && !rec.Start.Before(againReady.Add(-time.Second))
	})
	assert.False(t, firstToAgain.IsZero(), "its successor serves")
}

func scaleElastic(t testing.TB, namespace, name string, replicas int) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(namespace).Patch(context.Background(), name,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "keda"})
	require.NoError(t, err)
}

// waitForPod waits until the pod exists and ok says so, and returns it with when that was seen
// (polled every 100 ms).
func waitForPod(t testing.TB, namespace, name string, ok func(*corev1.Pod) bool) (*corev1.Pod, time.Time) {
	t.Helper()
	var pod *corev1.Pod
	require.Eventually(t, func() bool {
		got, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		pod = got
		return err == nil && ok(got)
	}, 2*time.Minute, 100*time.Millisecond, "pod %s/%s", namespace, name)
	return pod, time.Now()
}

// waitForPodGone waits until the pod of that UID is gone.
func waitForPodGone(t testing.TB, namespace, name string, uid types.UID) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		return err != nil || got.UID != uid
	}, 2*time.Minute, 100*time.Millisecond, "pod %s/%s goes", namespace, name)
}

func ptrTo[T any](v T) *T { return &v }

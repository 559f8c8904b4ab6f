// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// A standalone router of two pickers rolled under a steady load of streamed completions cuts no
// stream and loses no request (docs/design/0044-a-standalone-door-that-stays-open.md): the
// pickers run active-active, so both are doors of the router's Service; the rollout surges (a
// new door is Ready before an old one goes), and an old pod's proxy drains when it stops (its
// preStop hook fails Envoy's health check and starts the graceful drain through the admin; the
// suite runs the hook with the pod's address for its loopback, termination.go) while the picker
// beside it answers for as long. The clients are kube-proxy's: a new connection goes to a Ready
// endpoint of the Service's EndpointSlices, and a client keeps its connection, on its pod, until
// the server asks it to close (Connection: close), as HTTP clients pool connections.
func TestStandaloneRouterRollsWithoutCuttingAStream(t *testing.T) {
	const namespace, name = "routing-door", "qwen-door"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "door", Count: 2, GPUs: 8})
	deployOnly(t, name, service(namespace, 2, standaloneRouter("prefix-cache", 2)))
	ctx := context.Background()
	service := api.RouterServiceName(name)

	ready := watchDoors(t, namespace, service)

	// 300 tokens streamed: 3 s of the simulated GPU's 10 ms a token
	stopClients := throughTheDoors(ready, 6, func(int) bool { return true }, 2*time.Minute, func(conn *http.Client, door string, c, i int) response {
		return completeWith(conn, "http://"+door, fmt.Sprintf("client %d request %d: tell me about the sea.", c, i), 300, true)
	})

	time.Sleep(5 * time.Second)
	deployments := harness.Cluster.Clientset.AppsV1().Deployments(namespace)
	picker := api.EndpointPickerName(name)
	before, err := deployments.Get(ctx, picker, metav1.GetOptions{})
	require.NoError(t, err)
	oldPods := podsOfDeployment(t, namespace, before)
	require.Len(t, oldPods, 2)
	rolled := time.Now()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"e2e.fusioninfer.io/restarted-at":%q}}}}}`, rolled.Format(time.RFC3339Nano))
	_, err = deployments.Patch(ctx, picker, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	// The rollout is over once the old pods are gone: each drained for the proxy's 60 s first.
	deleted := map[string]time.Time{} // an old pod's address: when it began terminating
	require.Eventually(t, func() bool {
		left := 0
		for _, old := range oldPods {
			p, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).Get(ctx, old.Name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			left++
			if _, seen := deleted[old.Status.PodIP]; !seen && p.DeletionTimestamp != nil {
				deleted[old.Status.PodIP] = terminatingSince(p)
			}
		}
		return left == 0
	}, 3*time.Minute, 200*time.Millisecond, "the old pickers' pods end")
	gone := time.Now()
	time.Sleep(2 * time.Second)
	results := stopClients()

	require.Len(t, deleted, 2, "both old pods were seen terminating")
	var failed, cut, acrossTheDrain int
	for _, r := range results {
		complete := r.err == nil && r.promptTokens > 0
		switch {
		case r.status == http.StatusOK && !complete:
			cut++
		case !complete:
			failed++
		}
		host, _, _ := net.SplitHostPort(r.door)
		// a stream in flight through an old door as it began terminating (terminatingSince has
		// seconds only: one that ended a second after it or later)
		if at, ok := deleted[host]; ok && r.start.Before(at) && r.end.After(at.Add(time.Second)) && complete {
			acrossTheDrain++
		}
		if !complete && (failed+cut) <= 5 {
			t.Logf("not complete: %s at %s (+%s): status %d, %v", r.door, r.start.Format("15:04:05.000"), r.end.Sub(r.start).Round(time.Millisecond), r.status, r.err)
		}
	}
	t.Logf("%d requests in %s (rollout began after 5 s, old pods gone %s later): %d failed, %d streams cut, %d in flight through an old door as it began terminating, served to their end",
		len(results), gone.Sub(rolled).Round(time.Second)+5*time.Second, gone.Sub(rolled).Round(time.Second), failed, cut, acrossTheDrain)
	assert.Zero(t, cut, "no stream cut by the rollout")
	assert.Zero(t, failed, "no request lost to the rollout")
	assert.Positive(t, acrossTheDrain, "streams in flight through an old door as it began terminating were served to their end")
	after, err := deployments.Get(ctx, picker, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, after.Spec.Strategy.Type)
}

// terminatingSince is when the pod's deletion began, to the second: the API server sets a
// pod's deletionTimestamp to the end of its grace period (BeforeDelete, k8s.io/apiserver
// pkg/registry/rest/delete.go), not to the moment it was asked to go.
func terminatingSince(p *corev1.Pod) time.Time {
	at := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		at = at.Add(-time.Duration(*g) * time.Second)
	}
	return at
}

// watchDoors follows the router Service's Ready endpoints, as kube-proxy has them (read every
// 50 ms), once both pickers are doors and each serves a request; it returns them as they are now.
func watchDoors(t *testing.T, namespace, service string) func() []string {
	t.Helper()
	var ready atomic.Value // []string
	ready.Store([]string(nil))
	watching, stopWatching := context.WithCancel(context.Background())
	t.Cleanup(stopWatching)
	go func() {
		for watching.Err() == nil {
			if doors, err := readyEndpoints(namespace, service, "http"); err == nil {
				ready.Store(doors)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	require.Eventually(t, func() bool { return len(ready.Load().([]string)) == 2 }, 2*time.Minute, 200*time.Millisecond,
		"both pickers are doors of the router Service: %v\n%s", ready.Load(), eppLogOf(namespace))
	for _, door := range ready.Load().([]string) {
		require.Eventually(t, func() bool { return complete("http://"+door, "Are you there?", 2, false).status == http.StatusOK },
			90*time.Second, 500*time.Millisecond, "a request through the door %s is served\n%s", door, eppLogOf(namespace))
	}
	return func() []string { return ready.Load().([]string) }
}

// doorResult is a request a client sent through a door, and its response.
type doorResult struct {
	response
	door       string
	start, end time.Time
}

// throughTheDoors runs n clients, each sending requests one after another through a door of the
// router's Service as kube-proxy would take it: a new connection goes to the next Ready door
// (ready), in turn, as IPVS kube-proxy's default round-robin scheduler sends them (at random, as
// iptables mode does, a CI run once left no client on the door a test killed), and a client
// keeps its connection (keepAlive(c)) until it breaks or the server asks it to close, whatever
// the status of a response. The function returned stops them and gives every request's result.
func throughTheDoors(ready func() []string, n int, keepAlive func(c int) bool, timeout time.Duration,
	send func(conn *http.Client, door string, c, i int) response) func() []doorResult {
	var (
		mu      sync.Mutex
		results []doorResult
		running atomic.Bool
		clients sync.WaitGroup
		turn    atomic.Int64 // the next connection's door, round-robin
	)
	running.Store(true)
	for c := range n {
		clients.Go(func() {
			transport := &http.Transport{MaxConnsPerHost: 1, DisableKeepAlives: !keepAlive(c)}
			defer transport.CloseIdleConnections()
			conn := &http.Client{Transport: transport, Timeout: timeout}
			door := ""
			for i := 0; running.Load(); i++ {
				if door == "" {
					doors := ready()
					if len(doors) == 0 {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					door = doors[int(turn.Add(1)-1)%len(doors)]
				}
				start := time.Now()
				resp := send(conn, door, c, i)
				mu.Lock()
				results = append(results, doorResult{response: resp, door: door, start: start, end: time.Now()})
				mu.Unlock()
				// A response of any status keeps the connection (Go's transport keeps it once the
				// body is read, as an OpenAI SDK's pool does, and retries a 5xx on it); one that
				// broke (no status) or that the server asked to close does not.
				if resp.closed || resp.status == 0 || transport.DisableKeepAlives {
					door = "" // a new connection: kube-proxy picks its endpoint
				}
			}
		})
	}
	return func() []doorResult {
		running.Store(false)
		clients.Wait()
		return results
	}
}

// podsOfDeployment are the Deployment's pods, not being deleted.
func podsOfDeployment(t *testing.T, namespace string, d *appsv1.Deployment) []corev1.Pod {
	t.Helper()
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	require.NoError(t, err)
	list, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector.String()})
	require.NoError(t, err)
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// A standalone router of two pickers loses a door under a steady load of short completions: one
// picker pod's containers are killed (SIGKILL to the picker and its proxy: an OOM kill, a crashed
// container runtime). The requests in flight through that door fail and, within a second, every
// request is served through the other door, and none fails after (issue 56's goal; before
// design 0044 only the leader's pod was a door, and its loss refused requests for the 15 s lease).
// The pod is reported not Ready as its containers end, as the kubelet does (the suite's kubelet:
// tests/cluster termination.go endWithAnyRank); the clients are kube-proxy's (watchDoors): a new
// connection goes to a Ready endpoint, and a client whose connection broke opens a new one; half
// of them open one for every request.
func TestStandaloneRouterLosesADoorForUnderASecond(t *testing.T) {
	const namespace, name = "routing-door-kill", "qwen-kill"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "kill", Count: 2, GPUs: 8})
	deployOnly(t, name, service(namespace, 2, standaloneRouter("prefix-cache", 2)))
	ctx := context.Background()
	ready := watchDoors(t, namespace, api.RouterServiceName(name))

	// half the clients keep their connection, half open one a request (no keep-alive): those see
	// a door that stays in the Service after it died
	stopClients := throughTheDoors(ready, 8, func(c int) bool { return c%2 == 0 }, 30*time.Second, func(conn *http.Client, door string, c, i int) response {
		return completeWith(conn, "http://"+door, fmt.Sprintf("client %d request %d: say hello.", c, i), 10, false)
	})

	time.Sleep(3 * time.Second)
	deployment, err := harness.Cluster.Clientset.AppsV1().Deployments(namespace).Get(ctx, api.EndpointPickerName(name), metav1.GetOptions{})
	require.NoError(t, err)
	pickers := podsOfDeployment(t, namespace, deployment)
	require.Len(t, pickers, 2)
	victim := pickers[0]
	var processes []*testcluster.ContainerProcess
	for _, container := range []string{"epp", "envoy-proxy"} {
		p, err := harness.Cluster.ContainerProcess(ctx, namespace, victim.Name, container)
		require.NoError(t, err)
		processes = append(processes, p)
	}
	killed := time.Now()
	for _, p := range processes {
		require.NoError(t, p.Signal(syscall.SIGKILL))
	}
	var left time.Time
	require.Eventually(t, func() bool {
		doors := ready()
		left = time.Now()
		return len(doors) == 1 && !slices.ContainsFunc(doors, func(d string) bool { return strings.HasPrefix(d, victim.Status.PodIP+":") })
	}, 30*time.Second, 20*time.Millisecond, "the killed door leaves the Service: %v", ready())
	time.Sleep(6 * time.Second)
	results := stopClients()

	var failed, servedAfter int
	var lastFailure time.Duration
	for _, r := range results {
		if r.status == http.StatusOK && r.err == nil && r.promptTokens > 0 {
			if r.start.After(killed) {
				servedAfter++
			}
			continue
		}
		failed++
		lastFailure = max(lastFailure, r.end.Sub(killed))
		if failed <= 5 {
			t.Logf("failed at +%s (sent +%s): %s: status %d, %v", r.end.Sub(killed).Round(time.Millisecond), r.start.Sub(killed).Round(time.Millisecond),
				r.door, r.status, r.err)
		}
	}
	t.Logf("%d requests; a door killed at +0, out of the Service's Ready endpoints at +%s: %d failed, the last at +%s; %d served after the kill",
		len(results), left.Sub(killed).Round(time.Millisecond), failed, lastFailure.Round(time.Millisecond), servedAfter)
	assert.LessOrEqual(t, lastFailure, time.Second, "requests fail for at most a second after a door is killed, and none after")
	assert.Positive(t, servedAfter, "the other door serves")
}

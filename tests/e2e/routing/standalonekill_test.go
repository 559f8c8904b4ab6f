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
func TestStandaloneRouterLosesADoorForUnderASecond(t *testing.T) {
	// half the clients keep their connection, half open one a request (no keep-alive): those see
	// a door that stays in the Service after it died
	kill := killAPicker(t, "routing-door-kill", "qwen-kill", []string{"epp", "envoy-proxy"}, func(c int) bool { return c%2 == 0 }, 0)
	assert.LessOrEqual(t, kill.lastFailure, time.Second, "requests fail for at most a second after a door is killed, and none after")
	assert.Positive(t, kill.servedAfter, "the other door serves")
}

// A picker container dies alone (an OOM kill, a crash) under a steady load of short completions
// from clients that keep their connections: its proxy lives, and its clients stay on it (its pod
// left the router Service, for new connections only). The proxy's ext_proc cluster fails over to
// the pickers' Service as its health check of its own picker fails (core/render standalone.go
// extProcCluster): requests fail for at most a second, and those after are served through the
// same door, picked by the other picker. Without the failover every request through that door
// fails until the kubelet restarts the picker (the suite restarts none). The clients pause 300 ms
// between requests: a client whose request is streaming its response as the picker dies loses
// its connection (Envoy resets a stream it cannot finish, and an HTTP/1.1 connection with it), so
// only clients between requests at that instant stay on the door.
func TestStandaloneRouterFailsOverWhenItsPickerDies(t *testing.T) {
	kill := killAPicker(t, "routing-picker-kill", "qwen-picker-kill", []string{"epp"}, func(int) bool { return true }, 300*time.Millisecond)
	assert.LessOrEqual(t, kill.lastFailure, time.Second, "requests fail for at most a second after a picker dies, and none after")
	assert.Positive(t, kill.servedThroughVictimAfter, "the door whose picker died serves, through another picker")
}

// pickerKill is what the clients saw of a picker pod's containers killed.
type pickerKill struct {
	lastFailure time.Duration // the last failed request's end, after the kill
	servedAfter int           // requests sent after the kill and served
	// servedThroughVictimAfter: of those, sent a second after the kill through the victim's door.
	servedThroughVictimAfter int
}

// killAPicker deploys a standalone router of two pickers, runs 8 clients through its doors
// (keepAlive(c): client c keeps its connection; each pauses between requests), kills the named containers of one picker pod
// (SIGKILL) and waits for its pod to leave the Service and 6 s more. The pod is reported not
// Ready as a container ends, as the kubelet does (the suite's kubelet: tests/cluster
// termination.go endWhenAProcessEnds); the clients are kube-proxy's (watchDoors): a new connection goes
// to a Ready endpoint, and a client whose connection broke opens a new one.
func killAPicker(t *testing.T, namespace, name string, containers []string, keepAlive func(c int) bool, pause time.Duration) pickerKill {
	t.Helper()
	harness.AddNodes(t, testcluster.Nodes{Prefix: name, Count: 2, GPUs: 8})
	deployOnly(t, name, service(namespace, 2, standaloneRouter("prefix-cache", 2)))
	ctx := context.Background()
	ready := watchDoors(t, namespace, api.RouterServiceName(name))
	stopClients := throughTheDoors(ready, 8, keepAlive, 30*time.Second, func(conn *http.Client, door string, c, i int) response {
		time.Sleep(pause)
		return completeWith(conn, "http://"+door, fmt.Sprintf("client %d request %d: say hello.", c, i), 10, false)
	})

	time.Sleep(3 * time.Second)
	deployment, err := harness.Cluster.Clientset.AppsV1().Deployments(namespace).Get(ctx, api.EndpointPickerName(name), metav1.GetOptions{})
	require.NoError(t, err)
	pickers := podsOfDeployment(t, namespace, deployment)
	require.Len(t, pickers, 2)
	victim := pickers[0]
	var processes []*testcluster.ContainerProcess
	for _, container := range containers {
		p, err := harness.Cluster.ContainerProcess(ctx, namespace, victim.Name, container)
		require.NoError(t, err)
		processes = append(processes, p)
	}
	killed := time.Now()
	for _, p := range processes {
		require.NoError(t, p.Signal(syscall.SIGKILL))
	}
	victimDoor := func(d string) bool { return strings.HasPrefix(d, victim.Status.PodIP+":") }
	var left time.Time
	require.Eventually(t, func() bool {
		doors := ready()
		left = time.Now()
		return len(doors) == 1 && !slices.ContainsFunc(doors, victimDoor)
	}, 30*time.Second, 20*time.Millisecond, "the killed door leaves the Service: %v", ready())
	time.Sleep(6 * time.Second)
	results := stopClients()

	var kill pickerKill
	failed := 0
	for _, r := range results {
		if r.status == http.StatusOK && r.err == nil && r.promptTokens > 0 {
			if r.start.After(killed) {
				kill.servedAfter++
				if victimDoor(r.door) && r.start.After(killed.Add(time.Second)) {
					kill.servedThroughVictimAfter++
				}
			}
			continue
		}
		failed++
		kill.lastFailure = max(kill.lastFailure, r.end.Sub(killed))
		if failed <= 5 {
			t.Logf("failed at +%s (sent +%s): %s: status %d, %v", r.end.Sub(killed).Round(time.Millisecond), r.start.Sub(killed).Round(time.Millisecond),
				r.door, r.status, r.err)
		}
	}
	t.Logf("%d requests; %v of a picker pod killed at +0, out of the Service's Ready endpoints at +%s: %d failed, the last at +%s; %d served after the kill, %d through its door from +1s",
		len(results), containers, left.Sub(killed).Round(time.Millisecond), failed, kill.lastFailure.Round(time.Millisecond), kill.servedAfter, kill.servedThroughVictimAfter)
	return kill
}

// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/observe"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// servingPort is the server template's port (server): local rank 0's, rank i's is servingPort + i.
const servingPort = 8000

// rank is one data parallel rank as the suite runs it: its process and the endpoint the pool
// gives the Endpoint Picker for it (the pod's address and the rank's port).
type rank struct {
	process  *testcluster.ContainerProcess
	pod      string
	endpoint string
	port     int32
}

// dataParallelRanks are the ranks the suite runs for the pods, by endpoint, each checked against
// the rendered launch: a pod of worker index w runs global ranks w x local .. w x local + local-1,
// local rank i on servingPort + i. The worker index is the real LWS's (its webhook gives the pod
// LWS_WORKER_INDEX), so this proves the start rank the launch computes from it.
func dataParallelRanks(t *testing.T, namespace string, pods []corev1.Pod, local int) map[string]rank {
	t.Helper()
	ranks := map[string]rank{}
	for _, pod := range pods {
		worker, err := strconv.Atoi(pod.Labels[lwsv1.WorkerIndexLabelKey])
		require.NoError(t, err, "pod %s has its LWS worker index", pod.Name)
		var got []int
		for _, p := range harness.Cluster.ContainerProcesses(namespace) {
			if p.Pod != pod.Name || p.Container != "vllm" {
				continue
			}
			require.NoError(t, p.Err, "pod %s rank %d runs", pod.Name, p.Rank)
			var serving []int32 // the server's ports, not a publisher's of KV-cache events beside it
			for port := range p.Ports {
				if port >= servingPort && port < servingPort+int32(local) {
					serving = append(serving, port)
				}
			}
			require.Len(t, serving, 1, "a rank serves one port")
			for _, port := range serving {
				assert.Equal(t, worker*local+int(port-servingPort), p.Rank, "pod %s (worker %d): the rank on port %d", pod.Name, worker, port)
				endpoint := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port)))
				ranks[endpoint] = rank{process: p, pod: pod.Name, endpoint: endpoint, port: port}
			}
			got = append(got, p.Rank)
		}
		assert.Len(t, got, local, "pod %s runs %d ranks: %v", pod.Name, local, got)
	}
	return ranks
}

// rankServed is how many requests a rank's own server has completed (vllm:request_success_total),
// read from its process.
func rankServed(t *testing.T, r rank) float64 {
	t.Helper()
	families, err := serverMetricsAt(r.process.URL(r.port))
	require.NoError(t, err, "rank %d's metrics", r.process.Rank)
	return metricSum(families, "vllm:request_success_total")
}

// A replica of vLLM's data parallel launch (issue 34, docs/design/0026): 2 pods of 2 ranks each,
// DP=4, on the real LWS (its worker index giving each pod its start rank) and Volcano. Requests
// through the real Endpoint Picker (GIE v1.5.0, which takes the pool's targetPorts as one
// endpoint a port: pkg/epp/datastore/datastore.go podUpdateOrAddIfNotExist) reach every rank of
// every pod, each a fair share, as the gateway and each rank's own server count them. When a
// pod's rank stops, one its readiness probe does not check, the pod's ranks are taken out and
// the other pod's ranks serve every request.
func TestDataParallelRanksEachServeThroughTheEndpointPicker(t *testing.T) {
	const namespace = "routing-data-parallel"
	const local = 2
	harness.AddNodes(t, testcluster.Nodes{Prefix: "dp", Count: 2, GPUs: 8})
	args := service(namespace, 1, router("queue-size"))
	args.Roles[0].Multinode = &api.Multinode{NodeCount: 2}
	args.Roles[0].Parallelism = &api.Parallelism{Data: 4, DataLocal: local, Expert: true}
	args.Roles[0].Template = serverWithGPUs(local)
	r := deploy(t, "moe", args)

	servers := pods(t, namespace, "moe", "server")
	require.Len(t, servers, 2, "one replica of 2 pods")
	ranks := dataParallelRanks(t, namespace, servers, local)
	require.Len(t, ranks, 4, "DP=4: 4 ranks")
	before := map[string]float64{}
	for endpoint, rk := range ranks {
		before[endpoint] = rankServed(t, rk)
	}

	// Every rank serves, a fair share each.
	start := len(r.gateway.Records())
	traffic := startLoad(r.gateway.URL, 8, 8, 20*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: tell me about experts.", i) })
	time.Sleep(10 * time.Second)
	requests := traffic.end()
	records := r.gateway.Records()[start:]
	require.Empty(t, failures(requests), "every request was served")
	perRank := map[string]int{}
	for _, rec := range records {
		require.True(t, rec.Completed, "request %s: %s", rec.ID, rec.Err)
		rk, ok := ranks[rec.Served]
		require.True(t, ok, "request %s served by %s, a rank of the replica", rec.ID, rec.Served)
		assert.Equal(t, rk.pod, rec.Pod, "the server of %s is a process of pod %s", rec.Served, rk.pod)
		perRank[rec.Served]++
	}
	fair := float64(len(records)) / float64(len(ranks))
	allRanksRate := float64(len(requests)) / 10
	for _, endpoint := range sortedByRank(ranks) {
		rk := ranks[endpoint]
		var served float64
		require.Eventually(t, func() bool {
			served = rankServed(t, rk) - before[endpoint]
			return served == float64(perRank[endpoint])
		},
			5*time.Second, 100*time.Millisecond, "rank %d's own server counts what the gateway sent it (%d): %v", rk.process.Rank, perRank[endpoint], &served)
		testcluster.Progress("data parallel: rank %d (pod %s, %s): %d of %d requests (%.0f%% of a fair share)",
			rk.process.Rank, rk.pod, endpoint, perRank[endpoint], len(records), 100*float64(perRank[endpoint])/fair)
		assert.GreaterOrEqual(t, float64(perRank[endpoint]), fair/2, "rank %d got at least half a fair share", rk.process.Rank)
	}

	hangRank(t, r, namespace, ranks)

	// The worker pod's local rank 1 (global rank 3) stops. The pod's launch script ends the
	// container when any rank ends, stopping the others (core/render DataParallelScript), and the
	// suite does as the script: rank 2 gets TERM and the pod is reported not Ready at once, without
	// waiting for the readiness probe. The Endpoint Picker then takes the pod's ranks out (GIE
	// v1.5.0 keeps Ready pods only: pkg/epp/datastore/datastore.go podResyncAll); ranks 0 and 1
	// serve every request. Before the script did so, the pod stayed Ready and about half the
	// requests failed for as long as the rank was down.
	stopped := ranks[sortedByRank(ranks)[3]]
	require.Equal(t, 3, stopped.process.Rank)
	sibling := ranks[sortedByRank(ranks)[2]]
	require.Equal(t, stopped.pod, sibling.pod)
	start = len(r.gateway.Records())
	traffic = startLoad(r.gateway.URL, 8, 8, 20*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: and now?", i) })
	time.Sleep(2 * time.Second)
	stoppedAt := time.Now()
	stopped.process.Stop(5 * time.Second)
	unreadyAt := whenNotReady(t, namespace, stopped.pod, "the pod of the stopped rank 3 is reported not Ready")
	siblingEnded, ok := sibling.process.Ended()
	require.True(t, ok, "rank 2, of the same container, was stopped with it")
	time.Sleep(8 * time.Second)
	requests = traffic.end()
	endedAt := time.Now()
	records = r.gateway.Records()[start:]
	// The last pick of any rank of the stopped rank's pod: its other rank serves until the
	// container ends.
	podEndpoints := map[string]bool{}
	for endpoint, rk := range ranks {
		podEndpoints[endpoint] = rk.pod == stopped.pod
	}
	_, lastPickedPod := routedWindow(records, func(rec gateway.Record) bool {
		return len(rec.Picked) > 0 && podEndpoints[rec.Picked[0]] && rec.RoutedAt.After(stoppedAt)
	})
	window, windowFailed, after := 0, 0, map[string]int{}
	for _, rec := range records {
		assert.False(t, rec.Lost(), "request %s was not lost: %s", rec.ID, rec.Err)
		switch {
		case !rec.Start.After(stoppedAt):
		case rec.Start.Before(unreadyAt):
			window++
			if !rec.Completed {
				windowFailed++
				require.NotEmpty(t, rec.Picked, "request %s: %s", rec.ID, rec.Err)
				assert.True(t, podEndpoints[rec.Picked[len(rec.Picked)-1]], "request %s failed only for a rank of the stopped pod, not %v: %s", rec.ID, rec.Picked, rec.Err)
			}
		default:
			if rec.Completed {
				after[rec.Served]++
			}
		}
	}
	require.False(t, lastPickedPod.IsZero(), "the pod's ranks were picked after the rank stopped (else their removal proves nothing)")
	testcluster.Progress("data parallel: rank %d stopped at +0; rank %d (its container's) ended at +%s; the pod not Ready at +%s, its ranks last picked at +%s; "+
		"before that %d requests, %d failed (picked for its ranks); after, served by rank: %s", stopped.process.Rank, sibling.process.Rank,
		siblingEnded.Sub(stoppedAt).Round(time.Millisecond), unreadyAt.Sub(stoppedAt).Round(time.Millisecond), lastPickedPod.Sub(stoppedAt).Round(time.Millisecond),
		window, windowFailed, perRankFigures(ranks, after))
	// The script looks at its ranks every second; the stand-in reports the pod when the container ends.
	assert.Less(t, unreadyAt.Sub(stoppedAt), 5*time.Second, "the pod of a stopped rank other than 0 is taken out within seconds")
	assert.Less(t, lastPickedPod.Sub(unreadyAt), time.Second, "the Endpoint Picker took the pod's ranks out within a second of it being not Ready")
	assertOnlyOtherPodsServe(t, ranks, stopped.pod, after)
	late := 0
	for _, s := range requests {
		if s.at.After(unreadyAt.Add(time.Second)) {
			late++
			assert.NoError(t, s.resp.err, "a request sent after the pod was taken out is served")
			assert.Equal(t, 200, s.resp.status)
		}
	}
	// A request picked for a stopped rank fails at once, as a port nothing listens on refuses it,
	// so no client hangs on one: the clients go on at least half as fast as when all ranks served.
	lateRate := float64(late) / endedAt.Sub(unreadyAt.Add(time.Second)).Seconds()
	assert.GreaterOrEqual(t, lateRate, allRanksRate/2, "requests a second after the pod was taken out: %.0f/s (%.0f/s before the rank stopped)", lateRate, allRanksRate)
}

// hangRank: the leader pod's local rank 1 (global rank 1) hangs (SIGSTOP: its port still takes
// connections, nothing answers, and the launch script sees nothing, for the process lives). The
// pod's readiness probe asks every rank (core/render RankReadinessProbe), so after
// failureThreshold (3) failed probes, a period (1 s) apart, the pod is not Ready; the Endpoint
// Picker takes both its ranks out, the other pod's ranks serve every new request, the service is
// not Running, and `fusioninfer status` names the rank. SIGCONT brings it back: the pod is Ready
// at the next probe and its ranks are picked again. Requests the Endpoint Picker sent the rank
// before the pod left wait for it and are served once it resumes (the suite's gateway sets no
// response timeout; Envoy's default route timeout, 15 s, would fail one held longer). Before the probe asked every rank, the
// pod stayed Ready, as its probe asked local rank 0 only.
func hangRank(t *testing.T, r *routed, namespace string, ranks map[string]rank) {
	t.Helper()
	hung := ranks[sortedByRank(ranks)[1]]
	require.Equal(t, 1, hung.process.Rank)
	podEndpoints := map[string]bool{}
	for endpoint, rk := range ranks {
		podEndpoints[endpoint] = rk.pod == hung.pod
	}
	const period, failureThreshold, timeout = time.Second, 3, time.Second // the fixture's probe (server), and the API's defaults
	start := len(r.gateway.Records())
	traffic := startLoad(r.gateway.URL, 8, 8, 20*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: are you stuck?", i) })
	time.Sleep(2 * time.Second)
	hungAt := time.Now()
	require.NoError(t, hung.process.Signal(syscall.SIGSTOP))
	resumed := false
	defer func() {
		if !resumed {
			_ = hung.process.Signal(syscall.SIGCONT)
		}
	}()
	unreadyAt := whenNotReady(t, namespace, hung.pod, "the pod of the hung rank 1 is reported not Ready")
	_, ended := hung.process.Ended()
	require.False(t, ended, "the hung rank's process lives: its container was not ended")

	// New requests go to the other pod's ranks only, and are served. They start a second after
	// the pod is seen not Ready, the bound the picker is held to below: the test may see the pod
	// not Ready before the picker's informer does (in a CI run the picker sent a request to the
	// hung rank 2 ms before it took the pod out, and the request waited out its client's timeout).
	time.Sleep(time.Until(unreadyAt.Add(time.Second)))
	during := startLoad(r.gateway.URL, 8, 8, 20*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: anyone else?", i) })
	time.Sleep(4 * time.Second)
	duringRequests := during.end()
	require.Empty(t, failures(duringRequests), "requests sent while the rank hangs and its pod is out are served")
	afterUnready := map[string]int{}
	routed := r.gateway.Records()[start:]
	_, lastPicked := routedWindow(routed, func(rec gateway.Record) bool { return len(rec.Picked) > 0 && podEndpoints[rec.Picked[0]] })
	for _, rec := range routed {
		if rec.Start.After(unreadyAt.Add(time.Second)) && rec.Completed {
			afterUnready[rec.Served]++
		}
	}
	assert.Less(t, lastPicked.Sub(unreadyAt), time.Second, "the Endpoint Picker took the pod's ranks out within a second of it being not Ready")
	assertOnlyOtherPodsServe(t, ranks, hung.pod, afterUnready)

	// The status: the role is not Running, and the diagnosis names the rank.
	observed, err := observe.NewClients(harness.Cluster.Kubeconfig, "", 30*time.Second)
	require.NoError(t, err)
	var report *diagnosis.Report
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		o, err := observed.Service(context.Background(), "moe", namespace, nil)
		require.NoError(t, err)
		report = diagnosis.Diagnose("moe", namespace, nil, o)
		if report.Phase != diagnosis.Running || time.Now().After(deadline) {
			break
		}
	}
	assert.NotEqual(t, diagnosis.Running, report.Phase, report.Text())
	require.Len(t, report.Roles, 1, report.Text())
	require.Len(t, report.Roles[0].Replicas, 1, report.Text())
	cause := report.Roles[0].Replicas[0].Cause
	require.NotNil(t, cause, report.Text())
	assert.Equal(t, "RankNotAnswering", cause.Reason, report.Text())
	assert.Equal(t, "Pod/"+hung.pod, cause.Object)
	assert.Contains(t, cause.Message, "data parallel rank 1 (local rank 1, port 8001) did not answer GET /health: timed out")
	phases := r.stack.RefreshedStatus("moe")
	assert.NotEqual(t, "Running", phases["server"], "the component's status while a rank hangs: %v", phases)
	testcluster.Progress("data parallel: while rank 1 hangs, the component's status says %v; the diagnosis (fusioninfer status): %s %s: %s", phases, cause.Object, cause.Reason, cause.Message)

	// SIGCONT: the pod is Ready again at the next probe, and its ranks are picked again.
	resumedAt := time.Now()
	require.NoError(t, hung.process.Signal(syscall.SIGCONT))
	resumed = true
	var readyAt time.Time
	require.Eventually(t, func() bool {
		if !slices.Contains(readyPodNames(pods(t, namespace, "moe", "server")), hung.pod) {
			return false
		}
		readyAt = time.Now()
		return true
	}, 30*time.Second, 100*time.Millisecond, "the pod of the resumed rank 1 is Ready again")
	requests := traffic.end()
	records := r.gateway.Records()[start:]
	held, failed := 0, 0
	var longest time.Duration
	for _, rec := range records {
		assert.False(t, rec.Lost(), "request %s was not lost: %s", rec.ID, rec.Err)
		if len(rec.Picked) > 0 && rec.Picked[len(rec.Picked)-1] == hung.endpoint && rec.Start.After(hungAt) && rec.Start.Before(resumedAt) {
			held++
			longest = max(longest, rec.End.Sub(rec.Start))
		}
		if rec.Start.After(hungAt) && !rec.Completed {
			failed++
		}
	}
	assert.Empty(t, failures(requests), "requests the hung rank held are served once it resumes")
	back := len(r.gateway.Records())
	again := startLoad(r.gateway.URL, 8, 8, 20*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: back?", i) })
	time.Sleep(4 * time.Second)
	require.Empty(t, failures(again.end()), "every request after the rank resumed was served")
	servedAgain := map[string]int{}
	for _, rec := range r.gateway.Records()[back:] {
		if rec.Completed {
			servedAgain[rec.Served]++
		}
	}
	for endpoint, rk := range ranks {
		assert.Positive(t, servedAgain[endpoint], "rank %d (pod %s) serves again", rk.process.Rank, rk.pod)
	}
	phases = r.stack.RefreshedStatus("moe")
	assert.Equal(t, "Running", phases["server"], "the component's status once every rank answers again: %v", phases)
	testcluster.Progress("data parallel: rank 1 hung (SIGSTOP) at +0; its pod not Ready at +%s (failureThreshold %d x period %s); %d requests went to "+
		"the hung rank meanwhile and were held (the longest %s) until it resumed, then served; %d failed; after: served by rank: %s; "+
		"SIGCONT at +%s, Ready again %s later; then served by rank: %s",
		unreadyAt.Sub(hungAt).Round(time.Millisecond), failureThreshold, period, held, longest.Round(time.Millisecond), failed,
		perRankFigures(ranks, afterUnready), resumedAt.Sub(hungAt).Round(time.Millisecond), readyAt.Sub(resumedAt).Round(time.Millisecond),
		perRankFigures(ranks, servedAgain))
	assert.Less(t, unreadyAt.Sub(hungAt), failureThreshold*period+period+timeout+time.Second,
		"the pod of a hung rank is out within failureThreshold x period (and a probe's timeout)")
	assert.Less(t, readyAt.Sub(resumedAt), period+timeout+time.Second, "the pod is Ready at the next probe after the rank resumes")
}

// assertOnlyOtherPodsServe: served (requests by endpoint) counts nothing for the ranks of the
// pod out of the pool, and something for every other rank.
func assertOnlyOtherPodsServe(t *testing.T, ranks map[string]rank, out string, served map[string]int) {
	t.Helper()
	for endpoint, rk := range ranks {
		if rk.pod == out {
			assert.Zero(t, served[endpoint], "rank %d (pod %s, not Ready) gets nothing", rk.process.Rank, rk.pod)
		} else {
			assert.Positive(t, served[endpoint], "rank %d keeps serving", rk.process.Rank)
		}
	}
}

// whenNotReady waits until the moe service's server pod is not Ready, and is when it saw it.
func whenNotReady(t *testing.T, namespace, pod, what string) time.Time {
	t.Helper()
	var at time.Time
	require.Eventually(t, func() bool {
		if slices.Contains(readyPodNames(pods(t, namespace, "moe", "server")), pod) {
			return false
		}
		at = time.Now()
		return true
	}, 30*time.Second, 100*time.Millisecond, what)
	return at
}

// sortedByRank are the endpoints of ranks in the order of their ranks.
func sortedByRank(ranks map[string]rank) []string {
	var out []string
	for endpoint := range ranks {
		out = append(out, endpoint)
	}
	sort.Slice(out, func(i, j int) bool { return ranks[out[i]].process.Rank < ranks[out[j]].process.Rank })
	return out
}

// perRankFigures are the counts of requests by rank, for the log.
func perRankFigures(ranks map[string]rank, counts map[string]int) string {
	var out []string
	for _, endpoint := range sortedByRank(ranks) {
		out = append(out, fmt.Sprintf("rank %d: %d", ranks[endpoint].process.Rank, counts[endpoint]))
	}
	return strings.Join(out, ", ")
}

// serverWithGPUs is server's template with gpus GPUs: a data parallel pod's, one a local rank.
func serverWithGPUs(gpus int) k8scorev1.PodTemplateSpecInput {
	tpl := server(nil).(*k8scorev1.PodTemplateSpecArgs)
	container := tpl.Spec.(*k8scorev1.PodSpecArgs).Containers.(k8scorev1.ContainerArray)[0].(*k8scorev1.ContainerArgs)
	container.Resources = &k8scorev1.ResourceRequirementsArgs{Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String(strconv.Itoa(gpus))}}
	return tpl
}

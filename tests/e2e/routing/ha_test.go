// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// Two replicas of GIE v1.5.0's Endpoint Picker with leader election, spread over two nodes: the
// leader is Ready and decides every request, the standby lives (its liveness SERVING) and is not
// Ready, so the picker's Service, and the gateway, send it nothing; the budget refuses the
// leader's eviction and allows the standby's. Then, under a steady load, the leader is lost, as
// a deleted pod (a drain or a rollout: SIGTERM, and the EPP gives up its lease on the way out,
// controller-runtime's LeaderElectionReleaseOnCancel, GIE v1.5.0 pkg/epp/server/controller_manager.go
// NewDefaultManager) and as a killed process (a crash or a lost node: SIGKILL, and the lease must
// expire, controller-runtime's default LeaseDuration 15 s); with FailClose and FailOpen. The
// standby takes over; the figures go to docs/router.md ("High availability").
func TestEndpointPickerSurvivesLosingTheLeader(t *testing.T) {
	const namespace = "routing-ha"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "ha", Count: 2, GPUs: 8})
	picker := router("queue-size")
	picker.EndpointPicker = &api.EndpointPicker{Release: api.EPPReleaseGIE150, Replicas: ptrTo(2)}
	args := service(namespace, 2, picker)
	r := deploy(t, "chat", args)
	lease := eppconfig.ReleaseGIE150.LeaseName(namespace, api.PoolName("chat"))

	leader, standby := r.steadyPickers(lease)
	assert.NotEqual(t, leader.Spec.NodeName, standby.Spec.NodeName, "the replicas are spread over the nodes")

	// The budget: one Ready picker (the leader) and it must stay; the standby may go.
	pdbs := harness.Cluster.Clientset.PolicyV1().PodDisruptionBudgets(namespace)
	require.Eventually(t, func() bool {
		pdb, err := pdbs.Get(context.Background(), api.EndpointPickerName("chat"), metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods == 2 &&
			pdb.Status.CurrentHealthy == 1 && pdb.Status.DesiredHealthy == 1 && pdb.Status.DisruptionsAllowed == 0
	}, time.Minute, 200*time.Millisecond, "the budget counts the leader alone healthy")
	err := evict(namespace, leader.Name)
	require.Error(t, err)
	assert.True(t, apierrors.IsTooManyRequests(err), "the leader's eviction is refused: %v", err)
	require.NoError(t, evict(namespace, standby.Name), "a standby, not Ready, is always evictable")
	waitForPodGone(t, namespace, standby.Name, standby.UID)
	r.steadyPickers(lease)

	type loss struct {
		mode api.FailureMode
		how  string // "deleted" or "killed"
	}
	for _, l := range []loss{{api.FailClose, "deleted"}, {api.FailClose, "killed"}, {api.FailOpen, "deleted"}, {api.FailOpen, "killed"}} {
		if args.Roles[1].FailureMode != l.mode {
			args.Roles[1].FailureMode = l.mode
			r.stack.Up()
			require.Eventually(t, func() bool { _, _, got := r.gateway.State(); return got == string(l.mode) }, 30*time.Second, 100*time.Millisecond,
				"the gateway reads the pool's failure mode %s", l.mode)
		}
		old, standby := r.steadyPickers(lease)
		oldProcess := eppProcess(t, namespace, old.Name)
		before := len(r.gateway.Records())
		traffic := startLoad(r.gateway.URL, 4, 8, 50*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: say something.", i) })
		time.Sleep(2 * time.Second)
		lost := time.Now()
		switch l.how {
		case "deleted":
			require.NoError(t, harness.Cluster.Clientset.CoreV1().Pods(namespace).Delete(context.Background(), old.Name, metav1.DeleteOptions{}))
		case "killed":
			require.NoError(t, oldProcess.Signal(syscall.SIGKILL))
		}
		// The next leader is the standby, or the pod the ReplicaSet makes for a deleted leader: it
		// campaigns as it starts, the standby at its next retry (every 2 s), so either may win. The
		// replacement may get the old pod's address (kwok gives it again), so a decision is the next
		// leader's by time: it came after the old leader's process ended.
		oldAddress := net.JoinHostPort(old.Status.PodIP, "9002")
		var routedAgain time.Time
		var nextAddress string
		require.Eventually(t, func() bool {
			ended, ok := oldProcess.Ended()
			if !ok {
				return false
			}
			for _, rec := range r.gateway.Records()[before:] {
				if rec.RoutedAt.After(ended) && len(rec.Picked) > 0 && rec.Completed && (routedAgain.IsZero() || rec.RoutedAt.Before(routedAgain)) {
					routedAgain, nextAddress = rec.RoutedAt, rec.EPP
				}
			}
			return !routedAgain.IsZero()
		}, 2*time.Minute, 100*time.Millisecond, "another picker takes over and decides\n%s", r.eppLog())
		next := podAt(t, namespace, nextAddress, old.UID)
		nextProcess := eppProcess(t, namespace, next.Name)
		time.Sleep(2 * time.Second)
		requests := traffic.end()
		records := r.gateway.Records()[before:]
		acquired := leaseAcquired(t, namespace, lease)
		ready, _ := nextProcess.ReadyAt()

		var refused, openRouted, picked, lostRequests, answered, resetAtLoss int
		var firstFailure, lastFailure time.Time
		lostStreamsOn := map[string]bool{}
		for _, rec := range records {
			if rec.Lost() {
				lostStreamsOn[rec.Served] = true
			}
		}
		for _, rec := range records {
			if rec.Lost() {
				lostRequests++
			}
			// The leader's loss aborts the streams it was passing back (the lost requests). The
			// sim serving such a stream then ends new requests' connections before a header:
			// llm-d-inference-sim v0.10.2 keeps a stream's fasthttp RequestCtx in the goroutine
			// that writes it (pkg/communication/http.go sendStream) and, when a write fails,
			// writes an error into it (sendOrFail, chunkSendFailed, sendError: SetBody closes the
			// ctx's body stream), when fasthttp has given that ctx to a new request already: the
			// new request's stream is closed ("io: read/write on closed pipe" in the sim's log),
			// its connection ended ("Post ...: EOF" here), and its own goroutine does the same in
			// turn (three such in one CI run, 2026-11-30). vLLM has no such failure: a casualty of
			// the stand-in, counted with the loss when it is on a server that lost a stream.
			if rec.FailedOpen && !rec.Accepted && strings.HasSuffix(rec.Err, ": EOF") && lostStreamsOn[rec.SentTo] &&
				!rec.Start.Before(lost) && rec.Start.Sub(lost) < 200*time.Millisecond {
				resetAtLoss++
			}
			switch {
			case rec.FailedClosed:
				refused++
			case rec.FailedOpen:
				openRouted++
			case rec.Immediate && rec.Status != 200:
				answered++ // the EPP itself answered the client: no endpoint, shed
			case len(rec.Picked) > 0:
				picked++
				// The standby decides nothing while the leader lives; only the two leaders decide.
				assert.True(t, rec.EPP == oldAddress || rec.EPP == nextAddress && !rec.RoutedAt.Before(lost),
					"only the leader decides: %s (sent +%s, routed +%s, completed %v, %d %s) decided by %s; the old leader %s, the next %s",
					rec.ID, since(rec.Start, lost), since(rec.RoutedAt, lost), rec.Completed, rec.Status, rec.Err, rec.EPP, oldAddress, nextAddress)
			}
			if rec.FailedClosed || rec.FailedOpen {
				if firstFailure.IsZero() {
					firstFailure = rec.Start
				}
				lastFailure = rec.Start
			}
		}
		failed := failures(requests)
		testcluster.Progress("HA %s, leader %s: %d requests; lease taken over by the %s +%s, Ready +%s, routed by it again +%s; "+
			"%d picked, %d failed (%d refused, %d answered by the EPP, %d reset by a server at the loss), %d routed by the gateway, %d lost; EPP failures from +%s to +%s",
			l.mode, l.how, len(records), takenBy(next, standby), since(acquired, lost), since(ready, lost), since(routedAgain, lost),
			picked, len(failed), refused, answered, resetAtLoss, openRouted, lostRequests, since(firstFailure, lost), since(lastFailure, lost))
		assert.True(t, acquired.After(lost), "the standby took the lease after the loss")
		switch l.mode {
		case api.FailClose:
			assert.Zero(t, openRouted)
			assert.Len(t, failed, refused+answered+lostRequests, "the refused requests, and those lost with the leader or answered by an EPP, are the only ones that failed\n%s",
				unserved(records, lost))
		case api.FailOpen:
			assert.Zero(t, refused)
			assert.Len(t, failed, answered+lostRequests+resetAtLoss, "every request but those lost with the leader or answered by an EPP was served\n%s",
				unserved(records, lost))
		}
		if l.how == "deleted" {
			assert.Zero(t, lostRequests, "a deleted leader finishes the requests it decided")
			assert.Less(t, routedAgain.Sub(lost), 10*time.Second, "a deleted leader's lease passes at once")
		} else {
			assert.Less(t, routedAgain.Sub(lost), 30*time.Second, "a killed leader's lease expires (15 s)")
			// The killed pod stays, not Ready, its process gone (the suite restarts none): the
			// next round wants two replicas again.
			require.NoError(t, harness.Cluster.Clientset.CoreV1().Pods(namespace).Delete(context.Background(), old.Name, metav1.DeleteOptions{}))
			waitForPodGone(t, namespace, old.Name, old.UID)
		}
	}
}

// steadyPickers waits until the router runs two Endpoint Pickers, one the leader (holding the
// lease, its readiness SERVING, its pod Ready and the only endpoint the gateway knows of the
// picker's Service) and the other a standby (live, its readiness NOT_SERVING, its pod not
// Ready), and returns them.
func (r *routed) steadyPickers(lease string) (leader, standby corev1.Pod) {
	t := r.t
	t.Helper()
	why := ""
	steady := assert.Eventually(t, func() bool {
		var live []corev1.Pod
		for _, p := range pods(t, r.namespace, r.name, "router") {
			if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
				live = append(live, p)
			}
		}
		if len(live) != 2 {
			why = fmt.Sprintf("%d pickers", len(live))
			return false
		}
		var leaders, standbys []corev1.Pod
		for _, p := range live {
			process, err := harness.Cluster.ContainerProcess(context.Background(), r.namespace, p.Name, "epp")
			if err != nil {
				why = err.Error()
				return false
			}
			if _, ended := process.Ended(); ended {
				why = p.Name + " ended"
				return false
			}
			liveness, errLive := health(process, eppconfig.HealthServiceLiveness)
			readiness, errReady := health(process, eppconfig.HealthServiceReadiness)
			if errLive != nil || errReady != nil || !liveness {
				why = fmt.Sprintf("%s: liveness %v %v, readiness %v", p.Name, liveness, errLive, errReady)
				return false
			}
			if readiness != rolestatus.PodReady(&p) {
				why = fmt.Sprintf("%s: readiness %v, pod Ready %v", p.Name, readiness, rolestatus.PodReady(&p))
				return false
			}
			if readiness {
				leaders = append(leaders, p)
			} else {
				standbys = append(standbys, p)
			}
		}
		if len(leaders) != 1 {
			why = fmt.Sprintf("%d Ready pickers", len(leaders))
			return false
		}
		leader, standby = leaders[0], standbys[0]
		if _, epp, _ := r.gateway.State(); !slices.Equal(epp, []string{net.JoinHostPort(leader.Status.PodIP, "9002")}) {
			why = fmt.Sprintf("the gateway's pickers %v, the leader %s", epp, leader.Status.PodIP)
			return false
		}
		_, err := harness.Cluster.Clientset.CoordinationV1().Leases(r.namespace).Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil {
			why = err.Error()
		}
		return err == nil
	}, 2*time.Minute, 200*time.Millisecond)
	if !steady {
		t.Fatalf("not one leader and one standby: %s\n%s", why, r.eppLog())
	}
	return leader, standby
}

// podAt is the Endpoint Picker's pod whose ext_proc address is address, but the pod not.
func podAt(t testing.TB, namespace, address string, not types.UID) corev1.Pod {
	t.Helper()
	for _, p := range pods(t, namespace, "chat", "router") {
		if p.UID != not && p.DeletionTimestamp == nil && net.JoinHostPort(p.Status.PodIP, "9002") == address {
			return p
		}
	}
	t.Fatalf("no picker at %s", address)
	return corev1.Pod{}
}

// takenBy says which pod took over: the standby, or the ReplicaSet's replacement of the leader.
func takenBy(next, standby corev1.Pod) string {
	if next.UID == standby.UID {
		return "standby"
	}
	return "replacement " + next.Name
}

// health asks the process's gRPC health server (port 9003) about service, as the kubelet's gRPC
// probe does: SERVING or not.
func health(p *testcluster.ContainerProcess, service string) (bool, error) {
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", p.Ports[9003]), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return false, err
	}
	return resp.Status == healthpb.HealthCheckResponse_SERVING, nil
}

func eppProcess(t testing.TB, namespace, pod string) *testcluster.ContainerProcess {
	t.Helper()
	p, err := harness.Cluster.ContainerProcess(context.Background(), namespace, pod, "epp")
	require.NoError(t, err)
	return p
}

// leaseAcquired is when the lease's holder took it (its acquireTime, to the microsecond).
func leaseAcquired(t testing.TB, namespace, name string) time.Time {
	t.Helper()
	l, err := harness.Cluster.Clientset.CoordinationV1().Leases(namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, l.Spec.AcquireTime)
	return l.Spec.AcquireTime.Time
}

// evict asks the eviction API to evict the pod, as a drain does.
func evict(namespace, pod string) error {
	return harness.Cluster.Clientset.PolicyV1().Evictions(namespace).Evict(context.Background(),
		&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: namespace}})
}

// unserved describes, from the gateway's side, each request that did not end in a whole 200 and
// was not refused by the failure mode: who decided it and when, so a failure the test did not
// expect can be told apart.
func unserved(records []gateway.Record, lost time.Time) string {
	var b strings.Builder
	for _, rec := range records {
		if rec.Completed && rec.Status == 200 || rec.FailedClosed {
			continue
		}
		fmt.Fprintf(&b, "%s: sent +%s, routed +%s, ended +%s; %d; EPP %s picked %v (error %q, failed open %v, closed %v); "+
			"accepted %v, served by %s; %s\n", rec.ID, since(rec.Start, lost), since(rec.RoutedAt, lost), since(rec.End, lost),
			rec.Status, rec.EPP, rec.Picked, rec.EPPError, rec.FailedOpen, rec.FailedClosed, rec.Accepted, rec.Served, rec.Err)
	}
	return b.String()
}

// since is at - from, rounded to the millisecond; "never" for a zero at.
func since(at, from time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return at.Sub(from).Round(time.Millisecond).String()
}

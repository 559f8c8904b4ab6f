// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// While the Endpoint Picker is replaced under a steady load (its pod deleted: its ReplicaSet makes
// the next one at once, since a terminating pod no longer counts (Recreate governs rollouts only),
// and the old one drains and goes while the next starts and syncs its pool), the
// gateway does what the rendered pool's failure mode says, FailClose refusing the requests it
// cannot route and FailOpen sending them to a Ready pod of its own choosing, and no request a
// model server accepted is lost. The failure mode changes with a `pulumi up` in between.
func TestEndpointPickerReplacementFollowsTheFailureMode(t *testing.T) {
	const namespace = "routing-failover"
	harness.AddNodes(t, testcluster.Nodes{Prefix: "failover", Count: 1, GPUs: 8})
	args := service(namespace, 3, router("queue-size"))
	r := deploy(t, "chat", args)
	servers := pods(t, namespace, "chat", "server")

	for _, mode := range []api.FailureMode{api.FailClose, api.FailOpen} {
		args.Roles[1].FailureMode = mode
		r.stack.Up()
		require.Eventually(t, func() bool { _, _, got := r.gateway.State(); return got == string(mode) }, 30*time.Second, 100*time.Millisecond,
			"the gateway reads the pool's failure mode %s", mode)

		before := len(r.gateway.Records())
		traffic := startLoad(r.gateway.URL, 4, 8, 50*time.Millisecond, func(i int) string { return fmt.Sprintf("Request %d: say something.", i) })
		time.Sleep(2 * time.Second)
		old := pods(t, namespace, "chat", "router")
		require.Len(t, old, 1)
		replaced := time.Now()
		require.NoError(t, harness.Cluster.Clientset.CoreV1().Pods(namespace).Delete(context.Background(), old[0].Name, metav1.DeleteOptions{}))
		// The next EPP picks again: a request after the replacement decided by the EPP.
		require.Eventually(t, func() bool {
			for _, rec := range r.gateway.Records()[before:] {
				if rec.Start.After(replaced) && len(rec.Picked) > 0 && rec.Completed {
					if next := pods(t, namespace, "chat", "router"); len(next) == 1 && next[0].UID != old[0].UID {
						return true
					}
				}
			}
			return false
		}, 3*time.Minute, 200*time.Millisecond, "a new Endpoint Picker picks\n%s", r.eppLog())
		time.Sleep(2 * time.Second)
		requests := traffic.end()
		records := r.gateway.Records()[before:]

		var refused, openRouted, picked int
		var firstFailure, lastFailure time.Time
		eppErrors := map[string]int{}
		for _, rec := range records {
			assert.False(t, rec.Lost(), "%s: request %s was not lost: %s", mode, rec.ID, rec.Err)
			switch {
			case rec.FailedClosed:
				refused++
				assert.Equal(t, 500, rec.Status)
			case rec.FailedOpen:
				openRouted++
				assert.True(t, rec.Completed, "a request routed by the gateway itself completes")
				assert.Contains(t, readyPodNames(servers), rec.Pod, "the gateway's own choice is a Ready pod of the pool")
			default:
				picked++
			}
			if rec.FailedClosed || rec.FailedOpen {
				eppErrors[rec.EPPError]++
				if firstFailure.IsZero() {
					firstFailure = rec.Start
				}
				lastFailure = rec.Start
			}
		}
		testcluster.Progress("%s: %d requests while the EPP was replaced: %d picked by an EPP, %d refused, %d routed by the gateway; "+
			"EPP failures from +%s to +%s after the deletion",
			mode, len(records), picked, refused, openRouted, firstFailure.Sub(replaced).Round(time.Millisecond), lastFailure.Sub(replaced).Round(time.Millisecond))
		testcluster.Progress("%s: the EPP failures: %v", mode, eppErrors)
		switch mode {
		case api.FailClose:
			assert.Positive(t, refused, "FailClose refused the requests no EPP could decide")
			assert.Zero(t, openRouted)
			assert.Len(t, failures(requests), refused, "the refused requests are the only ones that failed")
		case api.FailOpen:
			assert.Zero(t, refused)
			assert.Positive(t, openRouted, "FailOpen routed the requests no EPP could decide")
			assert.Empty(t, failures(requests), "every request was served")
		}
		assert.True(t, slices.ContainsFunc(records, func(rec gateway.Record) bool { return rec.Start.Before(replaced) && len(rec.Picked) > 0 }),
			"the first EPP picked before it was replaced")
	}
}

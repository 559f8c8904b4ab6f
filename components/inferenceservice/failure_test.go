// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

// TestAFailedChildIsTheOnlyError: when a replica's wait fails, the program fails with that
// error once; the component's outputs (and a stack output of its status) settle instead of
// failing again with "awaiting input property" (issue 16, item 5).
func TestAFailedChildIsTheOnlyError(t *testing.T) {
	failure := errors.New("LeaderWorkerSet default/story4-decode-1 not ready after 1h0m0s: Available=False")
	monitor := &pulumimock.Monitor{Fail: func(r pulumimock.Resource) error {
		if r.Name == "story4-decode-1-rollout" {
			return failure
		}
		return nil
	}}
	var status any
	err := monitor.Run(func(ctx *pulumi.Context) error {
		svc, err := NewInferenceService(ctx, "story4", story4Args())
		if err != nil {
			return err
		}
		ctx.Export("status", svc.Status)
		ctx.Export("routerReady", svc.RouterReady)
		svc.Status.ApplyT(func(s map[string]RoleStatus) error { status = s; return nil })
		return nil
	})
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), failure.Error()), "the failure, once: %v", err)
	assert.NotContains(t, err.Error(), "awaiting input property")
	require.NotNil(t, status, "the status settles")
	assert.Equal(t, PhaseFailed, status.(map[string]RoleStatus)["decode"].Phase)
}

// TestAFailedWaitNamesTheReplicaAndTheCommand: when a replica's registration fails (its wait
// timed out), the component logs its own error beside the provider's, once a replica: the replica,
// its role and LWS, the wait and its awaitTimeout, what the provider said, and the command that
// reads the cause from the cluster (issue 32, item 10). Only the failed replica is named: not the
// replicas whose rollouts waited for it, the first batch's through barrier 0 (every replica
// created) and the next batches' through the batch before.
func TestAFailedWaitNamesTheReplicaAndTheCommand(t *testing.T) {
	for _, replica := range []int{0, 1} {
		t.Run(fmt.Sprintf("replica %d", replica), func(t *testing.T) {
			lws := fmt.Sprintf("toobig-engine-%d", replica)
			failure := errors.New(`1 error occurred:` + "\n\t" + `* resource "urn:pulumi:stack::project::fusioninfer:index:InferenceService$kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet::` + lws + `" ` +
				`was successfully created, but the Kubernetes API server reported that it failed to fully initialize or become live: timed out waiting for the condition` + "\n\n")
			monitor := &pulumimock.Monitor{Fail: func(r pulumimock.Resource) error {
				if r.Name == lws { // the LWS: its rollout fails with it
					return failure
				}
				return nil
			}}
			two := 2
			err := monitor.Run(func(ctx *pulumi.Context) error {
				_, err := NewInferenceService(ctx, "toobig", &Args{Namespace: "llm", AwaitTimeout: "40s", Roles: []RoleArgs{{
					Name: "engine", ComponentType: "worker", Replicas: &two, Multinode: &api.Multinode{NodeCount: 4},
					Template: vllmTemplate("32", "", "8")}}})
				return err
			})
			require.Error(t, err)
			var errorsLogged []pulumimock.Log
			for _, l := range monitor.Logs() {
				if l.Severity == "error" {
					errorsLogged = append(errorsLogged, l)
				}
			}
			require.Len(t, errorsLogged, 1, "one message for the failed replica: %v", monitor.Logs())
			assert.Equal(t, fmt.Sprintf(`replica %d of role "engine" (LeaderWorkerSet llm/%s) failed while `+"`pulumi up`"+` waited up to 40s (awaitTimeout) `+
				`for it to be condition=Available; the kubernetes provider reported: timed out waiting for the condition. `+
				`What holds it back, and the fix: fusioninfer status --name toobig --namespace llm`, replica, lws), errorsLogged[0].Message)
			assert.Equal(t, "urn:pulumi:stack::project::fusioninfer:index:InferenceService::toobig", errorsLogged[0].Resource, "the component's own message")
		})
	}
}

// The provider's causes are kept as they come, beyond the engine's and the provider's framing.
func TestProviderCauses(t *testing.T) {
	for in, want := range map[string]string{
		"1 error occurred:\n\t* resource \"urn:x\" was successfully created, but the Kubernetes API server reported that it failed to fully initialize or become live: timed out waiting for the condition\n\n":                                                                                  "timed out waiting for the condition",
		"2 errors occurred:\n\t* resource \"urn:x\" was successfully created, but the Kubernetes API server reported that it failed to fully initialize or become live: 'epp' timed out waiting to be Ready\n\t* [MinimumReplicasUnavailable] Deployment does not have minimum availability\n\n": "'epp' timed out waiting to be Ready; [MinimumReplicasUnavailable] Deployment does not have minimum availability",
		"LeaderWorkerSet default/x not ready: Available=False": "LeaderWorkerSet default/x not ready: Available=False",
	} {
		assert.Equal(t, want, providerCauses(in))
	}
	assert.Equal(t, "40s", durationText(40*time.Second))
	assert.Equal(t, "90m", durationText(90*time.Minute))
	assert.Equal(t, "1h", durationText(time.Hour))
	assert.Equal(t, "1m30s", durationText(90*time.Second))
}

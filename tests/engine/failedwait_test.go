// SPDX-License-Identifier: Apache-2.0

package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/enginetest"
)

// timesOut is a kubernetes provider whose wait for the resource named lws times out: its Create
// answers as pulumi-kubernetes v4.32.0 does when an object's await fails (provider.go Create:
// the live object and the reason, partialError), which the engine's client of a provider plugin
// turns into a partial failure with an InitError (pkg/resource/plugin provider_plugin.go
// parseError). Every other object is created as given.
func timesOut(lws string) func(string) plugin.Provider {
	return func(string) plugin.Provider {
		return &deploytest.Provider{
			CreateF: func(_ context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
				if !req.Preview && req.URN.Name() == lws {
					return plugin.CreateResponse{ID: "llm/" + resource.ID(lws), Properties: req.Properties, Status: resource.StatusPartialFailure},
						&plugin.InitError{Reasons: []string{fmt.Sprintf("resource %q was successfully created, but the Kubernetes API server "+
							"reported that it failed to fully initialize or become live: timed out waiting for the condition", req.URN)}}
				}
				return plugin.CreateResponse{ID: resource.ID(req.URN.Name()), Properties: req.Properties, Status: resource.StatusOK}, nil
			},
		}
	}
}

// TestAFailedWaitSaysWhichReplicaAndWhatToRun: a 4-node gang that never becomes Available. The
// engine stops the deployment with the provider's error, and beside it is the component's own
// message, as the engine prints it: the replica, its wait, and the command that reads the cause
// from the cluster (issue 32, item 10). A real engine never answers the failed registration to the
// program; the message comes through the component's error hook, which the engine calls first.
func TestAFailedWaitSaysWhichReplicaAndWhatToRun(t *testing.T) {
	// The rollout waits; the LWS resource is created without a wait
	// (docs/design/0040-every-replica-loads-before-any-wait.md).
	plan, log := enginetest.Plan(t, timesOut("toobig-engine-0-rollout"), func(ctx *pulumi.Context) error {
		svc, err := inferenceservice.NewInferenceService(ctx, "toobig", &inferenceservice.Args{Namespace: "llm", AwaitTimeout: "40s",
			Roles: []inferenceservice.RoleArgs{{Name: "engine", ComponentType: "worker", Replicas: ptr.To(2), Multinode: &api.Multinode{NodeCount: 4},
				Template: vllm("vllm/vllm-openai:v0.33.0", "--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32")}}})
		if err != nil {
			return err
		}
		ctx.Export("status", svc.Status)
		return nil
	})
	_, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, false, nil, nil, "up")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timed out waiting for the condition", "the provider's error stands")
	printed := log.String()
	assert.Contains(t, printed, `replica 0 of role "engine" (LeaderWorkerSet llm/toobig-engine-0) failed while `+"`pulumi up`"+
		` waited up to 40s (awaitTimeout) for it to be condition=Available; the kubernetes provider reported: timed out waiting for the condition. `+
		`What holds it back, and the fix: fusioninfer status --name toobig --namespace llm`)
	assert.Equal(t, 1, strings.Count(printed, "fusioninfer status"), "one message, for the replica that failed: %s", printed)
	assert.NotContains(t, printed, "retrying", "the hook asks for no retry")
}

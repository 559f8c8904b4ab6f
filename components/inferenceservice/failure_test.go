package inferenceservice

import (
	"errors"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/pulumimock"
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

// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"errors"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnsafeAwaitOutputAsTheComponentReadsIt pins awaitOutput (awaitoutput.go), the component's one
// call of the Go SDK's unsupported internals.UnsafeAwaitOutput, as NewFromService (component.go),
// settle (settle.go) and the wait failures' watch (waitfailure.go) rely on it; the SDK has no
// public way to wait for an output. It fails when a Pulumi upgrade changes one of these answers:
//   - a known output: its value, known (NewFromService reads the built tree);
//   - an output whose apply failed: that error (NewFromService returns a template's validation
//     error before it registers anything);
//   - at preview, an unknown output: no error and not known (NewFromService registers the shape;
//     the contents preview as unknown);
//   - a child's output whose registration failed: an error, not a wait forever (settle marks the
//     child failed and resolves the component's outputs at once).
func TestUnsafeAwaitOutputAsTheComponentReadsIt(t *testing.T) {
	refused := errors.New("spec.roles[0].template: Required value")
	registrationFailed := errors.New("LeaderWorkerSet default/svc-chat-0 not ready after 1h0m0s")
	mocks := awaitMocks{fail: registrationFailed}
	run := func(dryRun bool, body func(ctx *pulumi.Context) error) {
		t.Helper()
		require.NoError(t, pulumi.RunErr(body, pulumi.WithMocks("project", "stack", mocks), func(info *pulumi.RunInfo) { info.DryRun = dryRun }))
	}

	run(false, func(ctx *pulumi.Context) error {
		value, known, err := awaitOutput(ctx, pulumi.String("built").ToStringOutput().ApplyT(func(s string) string { return s }))
		require.NoError(t, err)
		assert.True(t, known)
		assert.Equal(t, "built", value)

		_, _, err = awaitOutput(ctx, pulumi.String("template").ToStringOutput().ApplyT(func(string) (string, error) { return "", refused }))
		assert.ErrorIs(t, err, refused, "a failed apply is the error the component returns before registering")
		return nil
	})

	run(true, func(ctx *pulumi.Context) error {
		value, known, err := awaitOutput(ctx, pulumi.UnsafeUnknownOutput(nil).ApplyT(func(v any) any { return v }))
		require.NoError(t, err, "an unknown output at preview is no error")
		assert.False(t, known)
		assert.Nil(t, value)
		return nil
	})

	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		var child pulumi.CustomResourceState
		if err := ctx.RegisterResource("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "svc-chat-0", pulumi.Map{}, &child); err != nil {
			return err
		}
		_, _, err := awaitOutput(ctx, child.URN())
		assert.Error(t, err, "a child whose registration failed rejects its outputs")
		return nil
	}, pulumi.WithMocks("project", "stack", mocks))
	assert.ErrorContains(t, err, registrationFailed.Error(), "the program fails with the child's own error")
}

// awaitMocks registers every resource, or fails every registration with fail.
type awaitMocks struct{ fail error }

func (m awaitMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if args.TypeToken == "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet" {
		return "", nil, m.fail
	}
	return args.Name, args.Inputs, nil
}

func (awaitMocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

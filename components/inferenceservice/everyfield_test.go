// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/specfill"
)

// TestEveryFieldThroughTheGoArgs: the Go component's Args carry every field of the input model,
// pod templates included, to the spec the core builds from (the component's front door).
func TestEveryFieldThroughTheGoArgs(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		want := specfill.Filled(seed)
		require.Empty(t, specfill.Unset(&want.Spec))
		args, err := ArgsFromService(want)
		require.NoError(t, err)
		got, templates := args.Service("ignored")
		for i, input := range templates {
			resolved, err := internals.UnsafeAwaitOutput(context.Background(), input.ToPodTemplateSpecOutput())
			require.NoError(t, err)
			got.Spec.Roles[i].Template, err = templateToAPI(resolved.Value.(k8scorev1.PodTemplateSpec), nil)
			require.NoError(t, err)
		}
		assert.True(t, equality.Semantic.DeepEqual(want, got), "seed %d: the Go Args lost a field", seed)
	}
}

// TestArgsAreGenerated: args_generated.go is what `make gen` makes from the api package now.
func TestArgsAreGenerated(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "args_generated.go")
	out, err := exec.Command("go", "run", "./internal/argsgen", "-api", "../../api", "-out", fresh).CombinedOutput()
	require.NoError(t, err, string(out))
	want, err := os.ReadFile(fresh)
	require.NoError(t, err)
	got, err := os.ReadFile("args_generated.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "args_generated.go is stale: run make gen")
}

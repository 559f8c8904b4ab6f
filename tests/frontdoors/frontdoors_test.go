// SPDX-License-Identifier: Apache-2.0

// Package frontdoors proves \"several front doors, one truth\" (docs/architecture.md): for every example manifest,
// the children the Pulumi component registers (under mocks) are the objects the CLI renders.
package frontdoors

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/frontdoor"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// registerWithComponent deploys a manifest file through the component under mocks.
func registerWithComponent(t *testing.T, file string) frontdoor.Objects {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	monitor := &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		for _, doc := range docs {
			args, err := inferenceservice.ArgsFromService(doc.Service)
			if err != nil {
				return err
			}
			if _, err := inferenceservice.NewInferenceService(ctx, doc.Service.Name, args); err != nil {
				return err
			}
		}
		return nil
	}))
	return frontdoor.Registered(monitor)
}

func TestComponentChildrenEqualCLIRender(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testcli.Root(), "examples", "manifests", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			assert.Equal(t, frontdoor.Rendered(t, file), registerWithComponent(t, file))
		})
	}
}

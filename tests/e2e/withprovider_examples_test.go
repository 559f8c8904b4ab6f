// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// Every example manifest, each service's component built from it as program/ does, runs on the
// cluster (harness.AssertProgramRuns). The Go example programs run in their own packages.
// Through the real kubernetes provider: its file sorts after the tests through the wire (go test
// runs files in name order), which run while a new machine still builds the provider.
func TestExamplesDeployRunAndLeaveNothing(t *testing.T) {
	harness.AddNodesWithTopology(t, "examples", 40, 8)
	files, err := filepath.Glob(filepath.Join(testcluster.RepositoryRoot(), "examples", "manifests", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			harness.AssertProgramRuns(t, harness.ServicesProgram(harness.ManifestServices(t, file)...), file)
		})
	}
}

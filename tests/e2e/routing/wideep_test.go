// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// The DeepSeek-R1 wide-EP prefill/decode example (examples/manifests/deepseek-wide-ep-pd.yaml)
// runs as every example does (harness.AssertProgramRuns), here with its ranks' servers running:
// each of its 2 roles' replica is 2 pods of 8 ranks, global ranks 0..15 once each. It is the
// package's only test through the real kubernetes provider, in a file go test runs last (files in
// name order): on a new machine the provider is still being built while the tests before it run.
func TestDataParallelWideEPExampleRunsEveryRank(t *testing.T) {
	file := filepath.Join(testcluster.RepositoryRoot(), "examples", "manifests", "deepseek-wide-ep-pd.yaml")
	harness.AddNodes(t, testcluster.Nodes{Prefix: "wide-ep", Count: 4, GPUs: 8})
	services := harness.ManifestServices(t, file)
	require.Len(t, services, 1)
	svc := services[0]
	harness.AssertProgramRuns(t, harness.ServicesProgram(services...), file)
	byRole := map[string][]int{}
	for _, p := range harness.Cluster.ContainerProcesses(svc.Namespace) {
		if p.Container != "vllm" {
			continue
		}
		require.NoError(t, p.Err, "pod %s rank %d ran", p.Pod, p.Rank)
		for _, role := range []string{"prefill", "decode"} {
			if strings.HasPrefix(p.Pod, svc.Name+"-"+role+"-") {
				byRole[role] = append(byRole[role], p.Rank)
			}
		}
	}
	for _, role := range []string{"prefill", "decode"} {
		slices.Sort(byRole[role])
		want := make([]int, 16)
		for i := range want {
			want[i] = i
		}
		assert.Equal(t, want, byRole[role], "%s: ranks 0..15, each once", role)
		testcluster.Progress("wide EP example: %s ran ranks %v", role, byRole[role])
	}
}

// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// goldenInputs are every example manifest and every core test case.
func goldenInputs(t testing.TB) []string {
	t.Helper()
	examples, err := filepath.Glob("../../examples/manifests/*.yaml")
	require.NoError(t, err)
	cases, err := filepath.Glob("testdata/cases/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	require.NotEmpty(t, cases)
	return append(examples, cases...)
}

func buildFile(t testing.TB, path string) []*render.Tree {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	var trees []*render.Tree
	for _, doc := range docs {
		tree, verrs := render.Build(doc.Service)
		require.Empty(t, verrs, "%s: %v", path, verrs)
		trees = append(trees, tree)
	}
	return trees
}

// TestGoldenTrees renders whole trees; run `go test ./core/render -update` after an
// intended change and review the diff of testdata/golden.
func TestGoldenTrees(t *testing.T) {
	for _, input := range goldenInputs(t) {
		name := strings.TrimSuffix(filepath.Base(input), ".yaml")
		t.Run(name, func(t *testing.T) {
			var got []byte
			for _, tree := range buildFile(t, input) {
				doc, err := tree.YAML()
				require.NoError(t, err)
				got = append(got, doc...)
			}
			golden := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden file; run with -update")
			require.Equal(t, string(want), string(got))
		})
	}
}

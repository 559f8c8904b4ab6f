// SPDX-License-Identifier: Apache-2.0

package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// eachGoFile calls visit with the path, from the repository root, and the text of every Go file of
// the checkout but those under .git, hidden folders and node_modules (npm's, not ours).
func eachGoFile(t *testing.T, visit func(rel string, data []byte)) {
	t.Helper()
	root := testcli.Root()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		visit(rel, data)
		return nil
	})
	require.NoError(t, err)
}

// SPDX-License-Identifier: Apache-2.0

package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// askingShortMode is a call of testing.Short, what the Makefile's SHORT_PACKAGES looks for (written
// so that this file is not one of them).
var askingShortMode = regexp.MustCompile(`testing\.Short\(\)`)

// TestOnlyTestFilesAskForShortMode: make check runs without -short only the packages whose
// _test.go files call testing.Short (the Makefile's SHORT_PACKAGES: every other test ran in make
// test already, and would run the same). That list is complete only if no other file asks: a
// helper package that called testing.Short would change the tests of every package that imports
// it, and make check would not run them.
func TestOnlyTestFilesAskForShortMode(t *testing.T) {
	root := testcli.Root()
	var asking, tests []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." {
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
		if !askingShortMode.Match(data) {
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			tests = append(tests, rel)
		} else {
			asking = append(asking, rel)
		}
		return nil
	})
	require.NoError(t, err)
	assert.NotEmpty(t, tests, "no test asks for short mode: make check's SHORT_PACKAGES would be empty")
	assert.Empty(t, asking, "files that are not tests call testing.Short: make check runs without -short only the packages whose _test.go files do (Makefile, SHORT_PACKAGES); ask in the test instead and pass what it answers")
}

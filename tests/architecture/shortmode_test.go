// SPDX-License-Identifier: Apache-2.0

package architecture

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
	var asking, tests []string
	eachGoFile(t, func(rel string, data []byte) {
		switch {
		case !askingShortMode.Match(data):
		case strings.HasSuffix(rel, "_test.go"):
			tests = append(tests, rel)
		default:
			asking = append(asking, rel)
		}
	})
	assert.NotEmpty(t, tests, "no test asks for short mode: make check's SHORT_PACKAGES would be empty")
	assert.Empty(t, asking, "files that are not tests call testing.Short: make check runs without -short only the packages whose _test.go files do (Makefile, SHORT_PACKAGES); ask in the test instead and pass what it answers")
}

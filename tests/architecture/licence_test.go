// SPDX-License-Identifier: Apache-2.0

package architecture

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// licenceHeader is the first line of every Go file we write (the project's licence, LICENSE).
const licenceHeader = "// SPDX-License-Identifier: Apache-2.0"

// generated is Go's mark of a generated file (go help generate): its generator writes it whole.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// addHeaders is the script that puts the header on every file that lacks it, at the root.
const addHeaders = `for f in $(git ls-files '*.go' ':!sdk/'); do head -1 "$f" | grep -qx '` + licenceHeader + `' || grep -qE '^// Code generated .* DO NOT EDIT\.$' "$f" || { printf '` + licenceHeader + `\n\n' | cat - "$f" > "$f.tmp" && mv "$f.tmp" "$f"; }; done`

// TestEveryGoFileHasTheLicenceHeader: every Go file of the repository but the generated ones (the
// SDK's, the zz_generated and _generated files) opens with the SPDX licence identifier.
func TestEveryGoFileHasTheLicenceHeader(t *testing.T) {
	var missing []string
	checked := 0
	eachGoFile(t, func(rel string, data []byte) {
		if strings.HasPrefix(rel, "sdk"+string(filepath.Separator)) || generated.Match(data) {
			return
		}
		checked++
		if first, _, _ := strings.Cut(string(data), "\n"); first != licenceHeader {
			missing = append(missing, rel)
		}
	})
	assert.NotZero(t, checked)
	assert.Empty(t, missing, "Go files without %q as their first line; at the repository root, run:\n%s", licenceHeader, addHeaders)
}

// SPDX-License-Identifier: Apache-2.0

package expansion

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExpandAsTheKubelet: the cases of kubernetes' own expand_test.go that a container's args
// meet.
func TestExpandAsTheKubelet(t *testing.T) {
	vars := map[string]string{"POD_IP": "10.0.0.7", "EMPTY": ""}
	for input, want := range map[string]string{
		"kv@$(POD_IP):8000@m":   "kv@10.0.0.7:8000@m",
		"$(POD_IP)$(POD_IP)":    "10.0.0.710.0.0.7",
		"$(UNDEFINED)":          "$(UNDEFINED)",
		"$$(POD_IP)":            "$(POD_IP)",
		"$$$(POD_IP)":           "$10.0.0.7",
		"$(EMPTY)x":             "x",
		"$(POD_IP":              "$(POD_IP",
		"a $ b":                 "a $ b",
		"$()":                   "$()",
		`{"topic":"$(POD_IP)"}`: `{"topic":"10.0.0.7"}`,
	} {
		assert.Equal(t, want, Expand(input, vars), "%q", input)
	}
}

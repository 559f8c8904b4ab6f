// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultsAreGenerated: zz_generated.defaults.go is what `make gen` makes from the api
// package's default tags now.
func TestDefaultsAreGenerated(t *testing.T) {
	want, err := Generate("../..")
	require.NoError(t, err)
	got, err := os.ReadFile("../../zz_generated.defaults.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "zz_generated.defaults.go is stale: run make gen")
}

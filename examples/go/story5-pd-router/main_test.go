// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/frontdoor"
)

// TestProgramDeploysTheManifestsObjects: this program registers exactly the objects the CLI
// renders from the same story's manifest.
func TestProgramDeploysTheManifestsObjects(t *testing.T) {
	frontdoor.AssertProgramDeploysManifest(t, program, "../../manifests/qwen-pd-router.yaml")
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/frontdoor"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/pulumimock"
)

// TestProgramDeploysTheManifestsObjects: this program registers exactly the objects the CLI
// renders from the same story's manifest.
func TestProgramDeploysTheManifestsObjects(t *testing.T) {
	monitor := &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(program))
	assert.Equal(t, frontdoor.Rendered(t, "../../manifests/story2-disaggregated.yaml"), frontdoor.Registered(monitor))
}

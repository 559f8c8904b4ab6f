package main

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/frontdoor"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/pulumimock"
)

func withConfig(values map[string]string) pulumi.RunOption {
	return func(info *pulumi.RunInfo) {
		info.Config = map[string]string{}
		for k, v := range values {
			info.Config["project:"+k] = v
		}
	}
}

func TestRootProgramDeploysTheConfiguredManifest(t *testing.T) {
	const manifest = "examples/manifests/story4-disaggregated-multinode.yaml"
	frontdoor.AssertProgramDeploysManifest(t, program, "../"+manifest, withConfig(map[string]string{"manifest": manifest}))
}

func TestRootProgramRefusesABadManifest(t *testing.T) {
	monitor := &pulumimock.Monitor{}
	err := monitor.Run(program, withConfig(map[string]string{"manifest": "components/topology/testdata/cases/missing.yaml"}))
	require.Error(t, err)
	assert.Empty(t, monitor.Resources())
}

package main

import (
	"os"
	"path/filepath"
	"strings"
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

// TestRootProgramRefusesABadManifest: a manifest that breaks a rule registers nothing, and the
// error names the file, the line of the service and the field; a manifest that is not there says so.
func TestRootProgramRefusesABadManifest(t *testing.T) {
	data, err := os.ReadFile("../examples/manifests/story1-monolithic.yaml")
	require.NoError(t, err)
	bad := strings.Replace(string(data), "replicas: 1", "replicas: -1", 1)
	require.NotEqual(t, string(data), bad)
	manifest := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(bad), 0o600))

	monitor := &pulumimock.Monitor{}
	err = monitor.Run(program, withConfig(map[string]string{"manifest": manifest}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), manifest+":")
	assert.Contains(t, err.Error(), "spec.roles[0].replicas")
	assert.Empty(t, monitor.Resources())

	missing := filepath.Join(t.TempDir(), "missing.yaml")
	err = (&pulumimock.Monitor{}).Run(program, withConfig(map[string]string{"manifest": missing}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no such file")
}

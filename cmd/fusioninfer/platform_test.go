// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// TestPlatformRenderPrintsTheCoreOutput: without a spec, every part, as the core renders it.
func TestPlatformRenderPrintsTheCoreOutput(t *testing.T) {
	stdout, stderr, err := run(t, "", "platform", "render")
	require.NoError(t, err, stderr)
	objects, err := platform.Render(&platform.Spec{})
	require.NoError(t, err)
	want, err := platform.YAML(objects)
	require.NoError(t, err)
	require.Equal(t, string(want), stdout)
	require.Len(t, documents(t, stdout), len(objects))
}

func TestPlatformRenderWithASpec(t *testing.T) {
	stdout, stderr, err := run(t, "keda: {install: false}\ncontrollers: false\n", "platform", "render", "-f", "-")
	require.NoError(t, err, stderr)
	require.NotContains(t, stdout, "keda.sh")
	require.NotContains(t, stdout, "kind: Deployment")
	require.Contains(t, stdout, "name: leaderworkersets.leaderworkerset.x-k8s.io")
}

func TestPlatformRenderRefusesBadSpecs(t *testing.T) {
	stdout, stderr, err := run(t, "volcano: {instal: false}\n", "platform", "render", "-f", "-")
	requireExit(t, 1, err, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, `unknown field "volcano.instal" (did you mean "install"?)`)

	spec := filepath.Join(t.TempDir(), "platform.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("volcano:\n  schedulerConfiguration: |\n    actions: enqueue, allocate\n    tiers: [{plugins: [{name: predicates}, {name: proportion}]}]\n"), 0o644))
	stdout, stderr, err = run(t, "", "platform", "render", "-f", spec)
	requireExit(t, 1, err, stderr)
	require.Empty(t, stdout)
	require.Equal(t, spec+`:2: volcano.schedulerConfiguration.tiers: Invalid value: "predicates, proportion": the gang rules need the plugin gang`+"\n", stderr)

	// issue 55: a field's wrong type hides no other problem of the spec
	require.NoError(t, os.WriteFile(spec, []byte("keda: {install: maybe}\nvolcano:\n  schedulerConfiguration: |\n    actions: enqueue, allocate\n    tiers: [{plugins: [{name: predicates}]}]\n"), 0o644))
	stdout, stderr, err = run(t, "", "platform", "render", "-f", spec)
	requireExit(t, 1, err, stderr)
	require.Empty(t, stdout)
	assert.Contains(t, stderr, spec+`:1: keda.install: must be true or false, not string`)
	assert.Contains(t, stderr, spec+`:3: volcano.schedulerConfiguration.tiers: Invalid value: "predicates": the gang rules need the plugins gang and proportion`)
}

func TestPlatformRenderToADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "platform")
	stdout, stderr, err := run(t, "", "platform", "render", "-o", dir)
	require.NoError(t, err, stderr)
	objects, err := platform.Render(&platform.Spec{})
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("wrote %d objects to %s\n", len(objects), dir), stdout)
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, files, len(objects))
	require.Equal(t, "0000-namespace-lws-system.yaml", files[0].Name())
	require.True(t, strings.HasPrefix(files[3].Name(), "0003-lws-system-serviceaccount-"), files[3].Name())
	_, stderr, err = run(t, "", "platform", "render", "-o", dir)
	requireExit(t, 1, err, stderr)
	require.Contains(t, stderr, "is not empty")
}

// TestPlatformUnknownSubcommand: a mistyped subcommand is an error with a suggestion, as at the
// top level, not the help and exit status 0.
func TestPlatformUnknownSubcommand(t *testing.T) {
	stdout, stderr, err := run(t, "", "platform", "rendr")
	requireExit(t, 1, err, stderr)
	require.Empty(t, stdout)
	require.Equal(t, "fusioninfer: unknown command \"rendr\" for \"fusioninfer platform\": did you mean render (see 'fusioninfer platform --help')\n", stderr)
	_, stderr, err = run(t, "", "rendr")
	requireExit(t, 1, err, stderr)
	require.Equal(t, "fusioninfer: unknown command \"rendr\" for \"fusioninfer\": did you mean render (see 'fusioninfer --help')\n", stderr)
	stdout, _, err = run(t, "", "platform")
	require.NoError(t, err, "the group alone prints its help")
	require.Contains(t, stdout, "Available Commands:")
}

// TestPlatformRenderHelpSaysWhatItInstalls: the help names the upstream release of every part
// the core installs (platform.Versions), and no CRDs it does not install.
func TestPlatformRenderHelpSaysWhatItInstalls(t *testing.T) {
	stdout, stderr, err := run(t, "", "platform", "render", "--help")
	require.NoError(t, err, stderr)
	for _, v := range platform.Versions() {
		require.Contains(t, stdout, v)
	}
	require.NotContains(t, stdout, "llm-d router CRDs")
}

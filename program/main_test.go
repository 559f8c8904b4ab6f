// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/frontdoor"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
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

// TestRootProgramChecksEveryDocumentBeforeRegisteringAny: a manifest of several services is
// decoded, validated and checked for names unique across its services before anything is
// registered, so a bad later document leaves no earlier service half-deployed; every problem is
// on a line of its own, "file:line: ...", as the CLI prints them (never a Go slice).
func TestRootProgramChecksEveryDocumentBeforeRegisteringAny(t *testing.T) {
	service := func(name, role, extra string) string {
		return fmt.Sprintf("apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: %s}\nspec:\n  roles:\n"+
			"  - name: %s\n    componentType: worker\n%s    template: {spec: {containers: [{name: vllm, image: vllm/vllm-openai:v0.33.0}]}}\n", name, role, extra)
	}
	for _, tc := range []struct {
		name     string
		manifest string
		want     []string // the problems, in order, after "file:"
	}{{
		name:     "the second document breaks a rule",
		manifest: service("first", "inference", "") + "---\n" + service("second", "inference", "    replicas: -1\n"),
		want:     []string{`17: InferenceService "second": spec.roles[0].replicas: Invalid value: -1`},
	}, {
		name: "documents that do not decode",
		manifest: service("first", "inference", "") + "---\n" + service("second", "inference", "    replica: 2\n") +
			"---\n" + service("third", "inference", "    replicas: two\n"),
		want: []string{`17: unknown field "spec.roles[0].replica"`, "27: spec.roles[0].replicas: must be an integer"},
	}, {
		name:     "two services make the same object",
		manifest: service("a", "b-c", "") + "---\n" + service("a-b", "c", ""),
		want:     []string{`10: InferenceService "a-b": LeaderWorkerSet default/a-b-c-0 is also an object of `},
	}, {
		name:     "one service twice",
		manifest: service("svc", "inference", "") + "---\n" + service("svc", "inference", "    replicas: 2\n"),
		want:     []string{`10: InferenceService "svc": a second service "svc" in namespace "default" (the first at `},
	}, {
		// The component's URN is ...::fusioninfer:index:InferenceService::{name}, whatever the namespace.
		name: "one name in two namespaces",
		manifest: strings.Replace(service("svc", "inference", ""), "{name: svc}", "{name: svc, namespace: a}", 1) + "---\n" +
			strings.Replace(service("svc", "inference", ""), "{name: svc}", "{name: svc, namespace: b}", 1),
		want: []string{`10: InferenceService "svc": the root program deploys each service as the component named after it, and "svc" in namespace "b" would be a second`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := filepath.Join(t.TempDir(), "services.yaml")
			require.NoError(t, os.WriteFile(manifest, []byte(tc.manifest), 0o600))
			monitor := &pulumimock.Monitor{}
			err := monitor.Run(program, withConfig(map[string]string{"manifest": manifest}))
			require.Error(t, err)
			assert.Empty(t, monitor.Resources(), "nothing is registered")
			// Pulumi wraps the program's error ("1 error occurred:\n\t* ..."): its lines are the problems.
			var problems []string
			for _, line := range strings.Split(err.Error(), "\n") {
				if line = strings.TrimPrefix(line, "\t* "); strings.HasPrefix(line, manifest) {
					problems = append(problems, line)
				}
			}
			require.Len(t, problems, len(tc.want), err.Error())
			for i, want := range tc.want {
				assert.True(t, strings.HasPrefix(problems[i], manifest+":"+want), "problem %d: %s", i, problems[i])
			}
			assert.Contains(t, err.Error(), fmt.Sprintf("\n%d problem(s); nothing deployed", len(tc.want)))
			assert.NotContains(t, err.Error(), manifest+": [", "not a Go slice")
		})
	}
}

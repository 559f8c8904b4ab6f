// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// installCommand is docs/install.md's platform command: `... fusioninfer@VERSION platform render ARGS | kubectl apply ...`.
var installCommand = regexp.MustCompile(`fusioninfer@\S+ (platform render[^|]*)\|`)

// cliVersion is the version each of docs/install.md's `go run .../fusioninfer@VERSION` names.
var cliVersion = regexp.MustCompile(`cmd/fusioninfer@(\S+)`)

// TestInstallIsWhatTheE2EInstalls: the command docs/install.md (and so the README) gives for the
// prerequisites, run with the real CLI, prints every object the e2e cluster installs through the
// Platform (tests/cluster/platform.go), the same, plus the controllers the suite runs as processes.
func TestInstallIsWhatTheE2EInstalls(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(RepositoryRoot(), "docs", "install.md"))
	require.NoError(t, err)
	version, err := os.ReadFile(filepath.Join(RepositoryRoot(), "VERSION"))
	require.NoError(t, err)
	for _, m := range cliVersion.FindAllStringSubmatch(string(doc), -1) {
		require.Equal(t, "v"+strings.TrimSpace(string(version)), m[1], "docs/install.md runs the CLI of the VERSION file, as README does")
	}
	commands := installCommand.FindAllStringSubmatch(string(doc), -1)
	require.Len(t, commands, 1, "docs/install.md has one platform command")
	cmd := exec.Command(testcli.Binary(t), strings.Fields(commands[0][1])...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	installed := map[string]map[string]any{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		var obj map[string]any
		if decoder.Decode(&obj) != nil {
			break
		}
		o := platform.Object{Object: &unstructured.Unstructured{Object: obj}}
		installed[o.Key()] = obj
	}

	e2e, err := platform.Render(platformSpec(Options{Controllers: true, LeaderWorkerSet: true, Volcano: true, Kwok: true, KEDA: true}))
	require.NoError(t, err)
	require.NotEmpty(t, e2e)
	for _, o := range e2e {
		if skippedWebhook(o) {
			continue
		}
		require.Equal(t, installed[o.Key()], o.Object.Object, "%s: what the e2e installs is what docs/install.md installs", o.Key())
		delete(installed, o.Key())
	}
	for key := range installed {
		kind, _, _ := strings.Cut(key, "/")
		require.True(t, slices.Contains([]string{"Deployment", "Service", "Job", "Secret", "APIService",
			"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}, kind),
			"%s: installed by docs/install.md, not by the e2e", key)
	}
}

// Package frontdoors proves DESIGN.md's "two front doors, one truth": for every example manifest,
// the children the Pulumi component registers (under mocks) are the objects the CLI renders.
package frontdoors

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/pulumimock"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/testcli"
)

// renderWithCLI runs `fusioninfer render -f FILE` and returns its objects by "Kind/name".
func renderWithCLI(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(testcli.Binary(t), "render", "-f", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	objects := map[string]map[string]any{}
	decoder := yaml.NewDecoder(&stdout)
	for {
		var raw any
		if err := decoder.Decode(&raw); err != nil {
			break
		}
		data, err := yaml.Marshal(raw)
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, sigsyaml.Unmarshal(data, &obj)) // JSON-typed values, as Pulumi's
		meta := obj["metadata"].(map[string]any)
		objects[obj["kind"].(string)+"/"+meta["name"].(string)] = obj
	}
	return objects
}

// registerWithComponent deploys the same file through the component and returns its children's
// inputs by "Kind/name".
func registerWithComponent(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	monitor := &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		for _, doc := range docs {
			args, err := inferenceservice.ArgsFromService(doc.Service)
			if err != nil {
				return err
			}
			if _, err := inferenceservice.NewInferenceService(ctx, doc.Service.Name, args); err != nil {
				return err
			}
		}
		return nil
	}))
	children := map[string]map[string]any{}
	for _, r := range monitor.Resources() {
		if !r.Custom {
			continue
		}
		obj := r.Inputs.Mappable()
		meta := obj["metadata"].(map[string]any)
		children[obj["kind"].(string)+"/"+meta["name"].(string)] = obj
	}
	return children
}

func TestComponentChildrenEqualCLIRender(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testcli.Root(), "examples", "manifests", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			rendered := renderWithCLI(t, file)
			registered := registerWithComponent(t, file)
			require.NotEmpty(t, rendered)
			assert.Equal(t, rendered, registered)
		})
	}
}

// SPDX-License-Identifier: Apache-2.0

package sdkgen

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	repositoryRoot   = "../.."
	kubernetesSchema = repositoryRoot + "/third_party/pulumi-kubernetes/schema.json"
)

// version is the project's one version (the VERSION file), which make gen stamps into the SDKs.
func version(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repositoryRoot, "VERSION"))
	require.NoError(t, err)
	return strings.TrimSpace(string(data))
}

// TestCheckedInSDKsAreFresh: sdk/ is exactly what the generator makes from provider/schema.json at
// the VERSION file's version; after a change of either run `make gen` and review the diff.
func TestCheckedInSDKsAreFresh(t *testing.T) {
	schema, err := os.ReadFile(filepath.Join(repositoryRoot, "provider", "schema.json"))
	require.NoError(t, err)
	files, err := Generate(schema, version(t), kubernetesSchema)
	require.NoError(t, err)
	onDisk := map[string]bool{}
	for _, lang := range []string{"nodejs", "python", "go"} {
		root := filepath.Join(repositoryRoot, "sdk", lang)
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && buildOutput(d.Name()) { // what building or installing an SDK leaves, ignored by git
				return filepath.SkipDir
			}
			if d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(filepath.Join(repositoryRoot, "sdk"), path)
			onDisk[filepath.ToSlash(rel)] = true
			return nil
		}))
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(repositoryRoot, "sdk", name))
		if !assert.NoError(t, err, "%s is not checked in: run make gen", name) {
			continue
		}
		assert.Equal(t, string(want), string(got), "%s differs from a fresh generation: run make gen", name)
		delete(onDisk, name)
	}
	assert.Empty(t, onDisk, "files under sdk/ the generator no longer makes: run make gen")
}

func TestPodTemplatesAreKubernetesTypesInEveryLanguage(t *testing.T) {
	schema, err := os.ReadFile(filepath.Join(repositoryRoot, "provider", "schema.json"))
	require.NoError(t, err)
	files, err := Generate(schema, version(t), kubernetesSchema)
	require.NoError(t, err)
	assert.Contains(t, string(files["nodejs/types/input.ts"]), "pulumiKubernetes.types.input.core.v1.PodTemplateSpec")
	assert.Contains(t, string(files["python/pulumi_fusioninfer/_inputs.py"]), "pulumi_kubernetes.core.v1.PodTemplateSpecArgs")
	assert.Contains(t, string(files["go/fusioninfer/pulumiTypes.go"]), "corev1.PodTemplateSpec")
}

// buildOutput names the folders a build or install writes into an SDK's folder.
func buildOutput(dir string) bool {
	switch dir {
	case "node_modules", "bin", "build", "__pycache__":
		return true
	}
	return strings.HasSuffix(dir, ".egg-info")
}

// SPDX-License-Identifier: Apache-2.0

package modelsource

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	cases := []struct {
		uri                  string
		want                 Source
		cacheDir, publicName string
	}{
		{"hf://deepseek-ai/DeepSeek-R1", Source{Scheme: HuggingFace, Location: "deepseek-ai/DeepSeek-R1"},
			"hf/deepseek-ai/DeepSeek-R1/main", "deepseek-ai/DeepSeek-R1"},
		{"hf://deepseek-ai/DeepSeek-R1@56d4cbbb", Source{Scheme: HuggingFace, Location: "deepseek-ai/DeepSeek-R1", Revision: "56d4cbbb"},
			"hf/deepseek-ai/DeepSeek-R1/56d4cbbb", "deepseek-ai/DeepSeek-R1"},
		{"hf://gpt2@refs/pr/1", Source{Scheme: HuggingFace, Location: "gpt2", Revision: "refs/pr/1"}, "hf/gpt2/refs/pr/1", "gpt2"},
		{"s3://models/deepseek/r1/", Source{Scheme: S3, Location: "models", Path: "deepseek/r1"}, "s3/models/deepseek/r1", "r1"},
		{"gs://models", Source{Scheme: GCS, Location: "models"}, "gs/models", "models"},
		{"pvc://weights/deepseek", Source{Scheme: PVC, Location: "weights", Path: "deepseek"}, "", "deepseek"},
		{"oci://registry.example:5000/models/r1:v1", Source{Scheme: OCI, Location: "registry.example:5000/models/r1:v1"}, "", "r1"},
		{"oci://registry.example/models/r1@sha256:abc", Source{Scheme: OCI, Location: "registry.example/models/r1@sha256:abc"}, "", "r1"},
	}
	for _, tc := range cases {
		t.Run(tc.uri, func(t *testing.T) {
			got, err := Parse(tc.uri)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.cacheDir, got.CacheDir())
			assert.Equal(t, tc.publicName, got.PublicName())
			again, err := Parse(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "String gives back the source")
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for uri, want := range map[string]string{
		"deepseek-ai/DeepSeek-R1":  "no scheme: write hf://",
		"http://example.com/model": `unknown scheme "http": use one of hf, s3, gs, pvc, oci`,
		"hf://org/name/extra":      "a Hub source is hf://org/name[@revision]",
		"hf://org/..":              "a Hub source is hf://org/name[@revision]",
		"hf://org/name@":           "the revision after @ must be a branch, tag or commit",
		"hf://org/name@../x":       "the revision after @",
		"s3://Bucket_Name/x":       "is not a bucket name",
		"s3://models/a/../../b":    `the path may not contain ".."`,
		"pvc://Weights/x":          "is not a claim name",
		"oci://":                   "an image source is oci://",
		"gs://models/./r1":         `the path may not contain "."`,
	} {
		_, err := Parse(uri)
		if assert.Error(t, err, uri) {
			assert.Contains(t, err.Error(), want, uri)
		}
	}
}

func TestKinds(t *testing.T) {
	for uri, want := range map[string][2]bool{ // downloaded, object storage
		"hf://org/name": {true, false}, "s3://bkt/p": {true, true}, "gs://bkt/p": {true, true},
		"pvc://c/p": {false, false}, "oci://r/i:1": {false, false},
	} {
		src, err := Parse(uri)
		require.NoError(t, err)
		assert.Equal(t, want, [2]bool{src.Downloaded(), src.ObjectStorage()}, uri)
	}
}

func TestExcluded(t *testing.T) {
	patterns := []string{"original", "*.pth", "metal/*.bin"}
	for file, want := range map[string]bool{
		"original/consolidated.00.pth":     true, // its folder
		"original/params.json":             true, // its folder
		"consolidated.pth":                 true, // its name
		"sub/model.pth":                    true, // its name, in a folder
		"metal/model.bin":                  true, // the whole path
		"model-00001-of-00002.safetensors": false,
		"config.json":                      false,
		"originality.json":                 false,
	} {
		assert.Equal(t, want, Excluded(file, patterns), file)
	}
	assert.Error(t, ValidPattern("[a-"))
	assert.Error(t, ValidPattern(""))
	assert.NoError(t, ValidPattern("original"))
}

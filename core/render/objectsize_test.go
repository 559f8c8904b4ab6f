// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// TestAnObjectOverTheStoreLimitIsRefused: an argument of megabytes renders a LeaderWorkerSet the
// API server's store refuses (etcd's 1.5 MiB request limit); it is refused at render, at the
// field that makes it large, before anything is registered.
func TestAnObjectOverTheStoreLimitIsRefused(t *testing.T) {
	huge := strings.Repeat("x", 2<<20)
	manifest := strings.Replace(manifestService("big", "llm", 1), "image: vllm/vllm-openai:v0.33.0", "image: vllm/vllm-openai:v0.33.0, args: [--served-model-name, m, --x, "+huge+"]", 1)
	trees, _, problems := render.LoadManifest("big.yaml", []byte(manifest), nil)
	assert.Empty(t, trees)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], `big.yaml:6: InferenceService "big": spec.roles[0].template.spec.containers[0].args[3]: Too long: `)
	assert.Contains(t, problems[0], "LeaderWorkerSet big-inference-0 would be 2.0 MiB")
	assert.Less(t, len(problems[0]), 1000, "the message does not quote the value")

	// Just under the limit renders.
	fits := strings.Replace(manifestService("fits", "llm", 1), "image: vllm/vllm-openai:v0.33.0", "image: vllm/vllm-openai:v0.33.0, args: [--x, "+strings.Repeat("x", 1<<20)+"]", 1)
	trees, _, problems = render.LoadManifest("fits.yaml", []byte(fits), nil)
	assert.Empty(t, problems)
	assert.Len(t, trees, 1)
}

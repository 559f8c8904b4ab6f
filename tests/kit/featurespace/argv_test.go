// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestArgvReadsAsArgparse: the oracle's own reading of a command line, by vLLM's argparse rules.
func TestArgvReadsAsArgparse(t *testing.T) {
	a := argv{"vllm", "serve", "m", "--port", "8000", "--tensor_parallel_size=4", "--port=8090", "-pp", "2",
		"--kv_transfer_config.kv_role", "kv_both", "--enable-lora"}
	port, found := a.value("--port")
	assert.True(t, found)
	assert.Equal(t, "8090", port, "the last occurrence wins")
	assert.Equal(t, []string{"8000", "8090"}, a.values("--port"))
	assert.EqualValues(t, 4, a.size("--tensor-parallel-size", "-tp"), "underscores read as dashes, a value after =")
	assert.EqualValues(t, 2, a.size("--pipeline-parallel-size", "-pp"), "a short alias")
	assert.EqualValues(t, 1, a.size("--data-parallel-size", "-dp"), "absent: 1")
	assert.True(t, a.has("--kv-transfer-config.kv_role"), "dashes only before the first dot")
	assert.True(t, a.has("--enable-lora"))
	_, found = a.value("--enable-lora")
	assert.False(t, found, "a flag at the end has no value")
}

// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrefillDecodeWithoutARouterWarns: the component logs Tree.Warnings on `pulumi up` and the
// CLI prints them, so a prefill/decode service without a router is told, at spec.roles, that
// nothing sends its requests' prefill to the prefill role; a routed one is not.
func TestPrefillDecodeWithoutARouterWarns(t *testing.T) {
	assert.Equal(t, []string{"spec.roles: prefill/decode roles without a router: nothing sends a request's prefill to the prefill role " +
		"(no InferencePool, Endpoint Picker or disaggregation sidecar is rendered); add a role of componentType router, " +
		"or send requests through a proxy of your own that has the prefill role prefill before the decode role decodes"},
		story(t, "story4-disaggregated-multinode.yaml").Warnings())
	assert.Empty(t, story(t, "qwen-pd-router.yaml").Warnings(), "routed")
	assert.Empty(t, story(t, "story3-multinode.yaml").Warnings(), "no prefill/decode roles")
}

// TestPrefillDecodeWithoutAKVConnectorWarns: a prefill or decode server whose args give no
// --kv-transfer-config (in any spelling) is told, at its args, that vLLM would move no KV cache
// between the roles; a warning, not a refusal, since an image may configure it otherwise.
func TestPrefillDecodeWithoutAKVConnectorWarns(t *testing.T) {
	svc := story(t, "qwen-pd-router.yaml").Service
	decode := &svc.Spec.Roles[1].Template.Spec.Containers[0]
	i := slices.Index(decode.Args, "--kv-transfer-config")
	require.GreaterOrEqual(t, i, 0)
	decode.Args = slices.Delete(decode.Args, i, i+2)
	assert.Equal(t, []string{"spec.roles[1].template.spec.containers[0].args: a decoder server without --kv-transfer-config: " +
		"vLLM moves no KV cache between the prefill and decode roles, so a decode server computes every prompt again; " +
		`give the prefill and decode servers a KV connector (e.g. --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'), ` +
		"unless the image configures one otherwise"}, build(t, svc).Warnings())

	decode.Args = append(decode.Args, "--kv_transfer_config.kv_connector", "NixlConnector")
	assert.Empty(t, build(t, svc).Warnings(), "one key of it is the flag too")
}

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

// TestAReplacedLabelIsSaid: a recommended app.kubernetes.io label the user gives, on the service
// or a role's template, is replaced by the render's and said so at its field (issue 55); the
// rendered objects carry the render's value.
func TestAReplacedLabelIsSaid(t *testing.T) {
	svc := story(t, "story1-monolithic.yaml").Service
	svc.Labels = map[string]string{"app.kubernetes.io/part-of": "platform-x", "team": "a"}
	role := &svc.Spec.Roles[0]
	role.Template.Labels = map[string]string{"app.kubernetes.io/name": "qwen", "tier": "gold"}
	tree := build(t, svc)
	warnings := tree.Warnings()
	require.Len(t, warnings, 2)
	assert.Contains(t, warnings[0], `metadata.labels[app.kubernetes.io/part-of]: "platform-x" is replaced`)
	assert.Contains(t, warnings[1], `spec.roles[0].template.metadata.labels[app.kubernetes.io/name]: "qwen" is replaced`)
	for _, lws := range leaderWorkerSets(tree) {
		assert.Equal(t, svc.Name, lws.Labels["app.kubernetes.io/part-of"], "the render's value: what the warning says")
		assert.Equal(t, role.Name, lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels["app.kubernetes.io/name"])
		assert.Equal(t, "gold", lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels["tier"])
	}
}

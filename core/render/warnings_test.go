package render_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
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

// SPDX-License-Identifier: Apache-2.0

package render

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

func TestRolloutRoles(t *testing.T) {
	spec := api.InferenceServiceSpec{Roles: []api.Role{
		{Name: "router", ComponentType: api.ComponentTypeRouter},
		{Name: "prefill", ComponentType: api.ComponentTypePrefiller},
		{Name: "decode-a", ComponentType: api.ComponentTypeDecoder},
		{Name: "decode-b", ComponentType: api.ComponentTypeDecoder},
	}}
	names := func() []string {
		var out []string
		for _, r := range rolloutRoles(&spec) {
			out = append(out, r.Name)
		}
		return out
	}
	assert.Equal(t, []string{"decode-a", "decode-b", "prefill", "router"}, names(), "decoders, prefillers, router")
	spec.RolloutOrder = []string{"router", "decode-b"}
	assert.Equal(t, []string{"router", "decode-b", "decode-a", "prefill"}, names(), "the named roles first, the rest in the default order")
}

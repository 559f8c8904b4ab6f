// SPDX-License-Identifier: Apache-2.0

package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// TestClusterScopedNamesDifferForEveryService: two services, in any namespaces, never name a
// cluster-scoped object alike (issue 55: team-a/chat and team/a-chat both had
// team-a-chat-epp-metrics-auth, so the second apply took the first's binding).
func TestClusterScopedNamesDifferForEveryService(t *testing.T) {
	// Each service's namespace and name are one string of words split at one of its "-": two
	// services often make the same string split elsewhere, the case that collided.
	words := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "team", "chat"}), 2, 4)
	service := func(rt *rapid.T, words []string, which string) *api.InferenceService {
		at := rapid.IntRange(1, len(words)-1).Draw(rt, "split of "+which)
		return &api.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: strings.Join(words[:at], "-"), Name: strings.Join(words[at:], "-")}}
	}
	rapid.Check(t, func(rt *rapid.T) {
		w := words.Draw(rt, "words")
		a := service(rt, w, "a")
		if rapid.Bool().Draw(rt, "other words") {
			w = words.Draw(rt, "words of b")
		}
		b := service(rt, w, "b")
		for _, name := range []func(*api.InferenceService) string{eppAuthClusterRoleName, clusterRoleName} {
			same := a.Namespace == b.Namespace && a.Name == b.Name
			assert.Equal(rt, same, name(a) == name(b), "%s/%s and %s/%s: %s, %s", a.Namespace, a.Name, b.Namespace, b.Name, name(a), name(b))
			// ClusterRole and ClusterRoleBinding names: path segments (ValidateRBACName)
			assert.Empty(rt, validation.IsDNS1123Subdomain(name(a)), name(a))
		}
	})
	// A namespace without "-": the names stacks hold (design 0025).
	svc := &api.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "llama-8b"}}
	assert.Equal(t, "llm-llama-8b-epp-metrics-auth", eppAuthClusterRoleName(svc))
	assert.Equal(t, "llm-llama-8b-fma-node-view", clusterRoleName(svc))
}

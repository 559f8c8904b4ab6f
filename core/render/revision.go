// SPDX-License-Identifier: Apache-2.0

package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// revisionLength is the number of hex digits of the revision label.
const revisionLength = 10

// templateRevision hashes a role's rendered pod templates (before per-replica labels), so the
// fusioninfer.io/revision label changes exactly when what runs in the role's pods changes.
// Pulumi has no generation counter; a content hash is stable across runs and machines.
func templateRevision(templates ...*corev1.PodTemplateSpec) (string, error) {
	h := sha256.New()
	for _, t := range templates {
		// json.Marshal of the typed API struct is deterministic (struct field order, sorted maps).
		data, err := json.Marshal(t)
		if err != nil {
			return "", err
		}
		h.Write(data)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:revisionLength], nil
}

// SPDX-License-Identifier: Apache-2.0

package kubeprovider

import (
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Check is provider/pkg/provider/provider.go Check for what this project registers (named
// objects, server-side apply, no default namespace on the provider): the inputs normalised, a
// Patch resource refused without a name, and the provider's own error for a type token it cannot
// read. Not mirrored: autonaming (every object here is named: an unnamed one is refused) and the
// OpenAPI validation against the cluster's schema (the stand-in's API server validates at create).
func Check(urn resource.URN, news resource.PropertyMap) (resource.PropertyMap, error) {
	inputs := normalizeInputs(Unstructured(news))
	if IsPatchResource(urn, inputs.GetKind()) && inputs.GetName() == "" {
		return nil, errors.New("patch resources require the `.metadata.name` field to be set")
	}
	if inputs.GetName() == "" && !hasComputedValue(inputs.Object) {
		return nil, errors.New("the stand-in does not mirror autonaming: name the object")
	}
	if _, err := GVKFromURN(urn); err != nil {
		return nil, err
	}
	return resource.NewPropertyMapFromMap(inputs.Object), nil
}

// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"errors"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// The provider's inputs are the manifest's spec, with its metadata as the inputs serviceName,
// namespace and labels (metadataInputs). Validation and decoding name fields as the manifest has
// them; a TypeScript, Python or YAML program wrote the inputs, so its errors name those:
// "roles[0].replicas", not "spec.roles[0].replicas".

// sdkPath is a manifest field path as the provider's inputs name it.
func sdkPath(path string) string {
	if rest, ok := strings.CutPrefix(path, "spec."); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(path, "metadata."); ok {
		for input, key := range metadataInputs {
			if rest == key || strings.HasPrefix(rest, key+".") || strings.HasPrefix(rest, key+"[") {
				return input + strings.TrimPrefix(rest, key)
			}
		}
	}
	return path
}

// manifestPathInText is a manifest field path where a message starts one, or quotes one.
var manifestPathInText = regexp.MustCompile(`(^|[\s"(])((?:spec|metadata)\.[A-Za-z0-9_.\[\]/-]+)`)

// inSDKNames is err with the field paths it names as the inputs name them: a validation error
// field by field, any other error where its text starts or quotes a path.
func inSDKNames(err error) error {
	if err == nil {
		return nil
	}
	var invalid *api.ValidationError
	if errors.As(err, &invalid) {
		renamed := &api.ValidationError{Service: invalid.Service, Errors: make(field.ErrorList, len(invalid.Errors))}
		for i, e := range invalid.Errors {
			copied := *e
			copied.Field = sdkPath(e.Field)
			renamed.Errors[i] = &copied
		}
		return renamed
	}
	text := manifestPathInText.ReplaceAllStringFunc(err.Error(), func(match string) string {
		groups := manifestPathInText.FindStringSubmatch(match)
		return groups[1] + sdkPath(groups[2])
	})
	return errors.New(text)
}

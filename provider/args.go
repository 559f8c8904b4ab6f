// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// Args are the component's inputs as the served schema describes them: the service's name,
// namespace and labels beside every field of api.InferenceServiceSpec, the one input model
// (embedded, so infer lists its fields at the top level, as the Go component's Args have them).
// Only the schema is made from this type: the provider decodes what it receives itself
// (inputs.go), through the same strict decoding as a manifest.
type Args struct {
	// ServiceName is the service's name (metadata.name); defaults to the component's name.
	ServiceName string `pulumi:"serviceName,optional"`
	// Namespace of every child; defaults to "default".
	Namespace string `pulumi:"namespace,optional"`
	// Labels are the labels every child object gets.
	Labels map[string]string `pulumi:"labels,optional"`
	api.InferenceServiceSpec
}

// SPDX-License-Identifier: Apache-2.0

// Module pulumi-kubernetes builds the real kubernetes provider of Pulumi, pulumi-kubernetes
// v4.25.0, for the e2e suite's engine to launch as its "kubernetes" plugin.
//
// Its own main (provider/cmd/pulumi-resource-kubernetes/main.go) embeds schema-embed.json, which
// its generate.go writes from the schema.json beside it and which the module's zip leaves out;
// `go build -overlay` cannot supply it (the go command refuses to replace a file of the module
// cache). This main does what that one does, reading the same schema.json, from the module cache,
// at the path the suite gives, with the version set as generate.go sets it.
package main

import (
	"encoding/json"
	"log"
	"os"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

// providerVersion is the release the module's pseudo-version is (its v4.25.0 tag).
const providerVersion = "4.25.0"

// The files of provider/cmd/pulumi-resource-kubernetes the suite points at.
const (
	schemaVariable  = "PULUMI_KUBERNETES_SCHEMA"
	mappingVariable = "PULUMI_KUBERNETES_TERRAFORM_MAPPING"
)

func main() {
	version.Version = providerVersion
	schema, err := versionedSchema(os.Getenv(schemaVariable))
	if err != nil {
		log.Fatalf("%s: %v", schemaVariable, err)
	}
	mapping, err := os.ReadFile(os.Getenv(mappingVariable))
	if err != nil {
		log.Fatalf("%s: %v", mappingVariable, err)
	}
	provider.Serve("kubernetes", version.Version, schema, mapping)
}

// versionedSchema is the package schema at path with its version set, as generate.go writes
// schema-embed.json.
func versionedSchema(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, err
	}
	spec["version"], _ = json.Marshal(providerVersion)
	return json.Marshal(spec)
}

// SPDX-License-Identifier: Apache-2.0

// Command pulumi-resource-fusioninfer is the multi-language provider plugin: it hosts the
// InferenceService component for TypeScript, Python and YAML programs.
package main

import (
	"context"
	"fmt"
	"os"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/fusioninfer/pulumi-fusioninfer/provider"
)

// version is stamped at build time: -ldflags "-X main.version=1.2.3".
var version = "0.0.0-dev"

func main() {
	prov, err := provider.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := p.RunProvider(context.Background(), provider.Name, version, prov); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// SPDX-License-Identifier: Apache-2.0

// Command sdkgen regenerates sdk/nodejs, sdk/python and sdk/go from provider/schema.json
// (`make gen`): fusioninfer-sdkgen -schema provider/schema.json -kubernetes third_party/pulumi-kubernetes/schema.json -out sdk
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fusioninfer/pulumi-fusioninfer/provider/sdkgen"
)

func main() {
	schemaFile := flag.String("schema", "provider/schema.json", "the provider's schema")
	kubernetes := flag.String("kubernetes", "third_party/pulumi-kubernetes/schema.json", "the pulumi-kubernetes package schema")
	version := flag.String("version", "0.1.0", "the SDKs' version")
	out := flag.String("out", "sdk", "where the SDKs go; every language folder is replaced")
	flag.Parse()
	if err := run(*schemaFile, *kubernetes, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

func run(schemaFile, kubernetes, version, out string) error {
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		return err
	}
	files, err := sdkgen.Generate(data, version, kubernetes)
	if err != nil {
		return err
	}
	for _, lang := range []string{"nodejs", "python", "go"} {
		if err := os.RemoveAll(filepath.Join(out, lang)); err != nil {
			return err
		}
	}
	for name, content := range files {
		target := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, content, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %d files under %s\n", len(files), out)
	return nil
}

// SPDX-License-Identifier: Apache-2.0

// Command describe writes the doc comments of the schema's Go types as JSON (`make gen` puts them
// in provider/descriptions.json, which the provider embeds); with -reference FILE it also writes
// the field reference between FILE's markers (docs/reference.md).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/provider/descriptions"
)

func main() {
	reference := flag.String("reference", "", "a markdown file whose field reference to rewrite")
	flag.Parse()
	if err := run(*reference); err != nil {
		fmt.Fprintln(os.Stderr, "describe:", err)
		os.Exit(1)
	}
}

func run(reference string) error {
	table, err := descriptions.Collect(".")
	if err != nil {
		return err
	}
	if reference != "" {
		return writeReference(reference, descriptions.Reference(table))
	}
	out, err := json.MarshalIndent(table, "", "  ")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}

// writeReference replaces what is between the file's markers with fields.
func writeReference(file, fields string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	before, rest, found := strings.Cut(string(data), descriptions.ReferenceStart)
	_, after, foundEnd := strings.Cut(rest, descriptions.ReferenceEnd)
	if !found || !foundEnd {
		return fmt.Errorf("%s has no %q ... %q markers", file, descriptions.ReferenceStart, descriptions.ReferenceEnd)
	}
	text := before + descriptions.ReferenceStart + "\n" + fields + descriptions.ReferenceEnd + after
	return os.WriteFile(file, []byte(text), 0o644)
}

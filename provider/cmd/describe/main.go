// Command describe writes the doc comments of the schema's Go types as JSON (`make gen` puts them
// in provider/descriptions.json, which the provider embeds).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/fusioninfer/pulumi-fusioninfer/provider/descriptions"
)

func main() {
	table, err := descriptions.Collect(".")
	if err == nil {
		var out []byte
		if out, err = json.MarshalIndent(table, "", "  "); err == nil {
			_, err = os.Stdout.Write(append(out, '\n'))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "describe:", err)
		os.Exit(1)
	}
}

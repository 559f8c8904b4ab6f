// SPDX-License-Identifier: Apache-2.0

// Command build-programs builds every program of the simulated cluster into the user cache
// (tests/cluster BuildPrograms): `make cluster-programs`, which CI runs in the background beside
// make test.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

func main() {
	parallel := flag.Int("parallel", 2, "how many programs to build at once")
	only := flag.String("only", "", "build only these programs, by name, comma-separated (lws-controller-manager,kwok)")
	flag.Parse()
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	if err := testcluster.BuildPrograms(*parallel, names...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// SPDX-License-Identifier: Apache-2.0

// Package fma embeds the CRDs, ValidatingAdmissionPolicies and bindings of llm-d fast model
// actuation v0.6.4, which no Go module ships; see ../README.md for their source and licence.
package fma

import "embed"

// Files are FMA's manifests, one object a file, gzipped (gzip -n -9: deterministic): the
// LauncherConfig CRD alone is 0.6 MB of YAML, and the CLI that embeds them stays under its
// ceiling (cmd/fusioninfer weight_test.go).
//
//go:embed *.yaml.gz
var Files embed.FS

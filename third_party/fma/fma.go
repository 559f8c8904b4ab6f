// Package fma embeds the CRDs, ValidatingAdmissionPolicies and bindings of llm-d fast model
// actuation v0.6.4, which no Go module ships; see ../README.md for their source and licence.
package fma

import "embed"

// Files are FMA's manifests, one object a file.
//
//go:embed *.yaml
var Files embed.FS

// SPDX-License-Identifier: Apache-2.0

// Package platform embeds the upstream release manifests the Platform component installs, built
// from the Go modules that ship them by update.sh; see ../README.md for their source, version and
// licence.
package platform

import "embed"

// Files are the manifests, one gzipped file a part, with versions.txt (the module versions).
//
//go:embed *.yaml.gz versions.txt
var Files embed.FS

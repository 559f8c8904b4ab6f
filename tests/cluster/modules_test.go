// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAlignedModulesShareTheirDependencies: the programs of each group of alignedModules build
// every module they share at one version, so that the build cache compiles each shared package
// once (issue 54). A version raised in one wrapper module and not the others fails it, naming the
// module and who builds which version. Not in short mode: it reads the wrapper modules' package
// graphs, downloading their modules.
func TestAlignedModulesShareTheirDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every wrapper module's package graph")
	}
	for _, group := range alignedModules {
		t.Run(group[0], func(t *testing.T) {
			versions := map[string]map[string][]string{} // module -> version -> programs
			for _, b := range programs() {
				if !slices.Contains(group, b.module) {
					continue
				}
				modules, err := b.modulesBuilt()
				require.NoError(t, err)
				for path, version := range modules {
					if versions[path] == nil {
						versions[path] = map[string][]string{}
					}
					versions[path][version] = append(versions[path][version], b.name)
				}
			}
			for path, byVersion := range versions {
				assert.Len(t, byVersion, 1, "%s is built at more than one version: %v", path, byVersion)
			}
		})
	}
}

// modulesBuilt are the modules (path -> version) that provide the packages of the binary's build,
// as `go list -deps` reads them with the build's tags and environment.
func (b binary) modulesBuilt() (map[string]string, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=Module", "-tags", buildTags[b.module], b.pkg)
	cmd.Dir = moduleDir(b.module)
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod"), buildEnvironment[b.module]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s in %s: %w: %s", b.pkg, b.module, err, stderr.String())
	}
	modules := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Module *struct {
				Path, Version string
				Main          bool
				Replace       *struct{ Version string }
			}
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return modules, nil
		} else if err != nil {
			return nil, err
		}
		if p.Module != nil && !p.Module.Main {
			modules[p.Module.Path] = p.Module.Version
			if p.Module.Replace != nil { // kubernetes pins its staging modules by replace
				modules[p.Module.Path] = p.Module.Replace.Version
			}
		}
	}
}

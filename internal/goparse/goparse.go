// SPDX-License-Identifier: Apache-2.0

// Package goparse parses the Go files of one package folder as the go command builds it: the
// files go/build selects for this platform and build tags (go/parser.ParseDir, deprecated since
// Go 1.25, took every file of the folder whatever its build constraints).
package goparse

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
)

// Package is the package's non-test files in dir, parsed with mode into fset, in file name
// order, skipping any file for which skip is true (nil: none).
func Package(fset *token.FileSet, dir string, mode parser.Mode, skip func(name string) bool) ([]*ast.File, error) {
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, name := range pkg.GoFiles {
		if skip != nil && skip(name) {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, mode)
		if err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	return files, nil
}

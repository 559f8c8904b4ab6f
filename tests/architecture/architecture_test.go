// SPDX-License-Identifier: Apache-2.0

// Package architecture holds the layers to the code: every import of every package of the module,
// as `go list` reads them (with the e2e and conformance build tags too), against the rules of
// rules_test.go; and docs/architecture.md's tables of the rules and of the imports, written from
// them (go test ./tests/architecture -update).
package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

var update = flag.Bool("update", false, "rewrite docs/architecture.md's generated tables")

const module = "github.com/fusioninfer/pulumi-fusioninfer"

// pkg is what `go list -json` says of a package that the rules read. Imports are what its
// non-test files import: a test's own imports ship in no binary and may cross a wall.
type pkg struct {
	ImportPath string
	Doc        string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// folder is a package's path from the module's root ("" for the root).
func folder(importPath string) (string, bool) {
	if importPath == module {
		return "", true
	}
	rest, ok := strings.CutPrefix(importPath, module+"/")
	return rest, ok
}

// holds: the folder f is dir or holds it.
func holds(f, dir string) bool {
	return f == dir || strings.HasPrefix(dir, f+"/")
}

// ruleOf is the rule of the longest folder holding dir.
func ruleOf(dir string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if holds(r.folder, dir) && (!found || len(r.folder) > len(best.folder)) {
			best, found = r, true
		}
	}
	return best, found
}

// listed is every package of the module as `go list` reads it, listed once for all the tests.
var listed = sync.OnceValues(func() ([]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Doc,Imports,Deps,Error", "-tags", "e2e,conformance", "./...")
	cmd.Dir = testcli.Root()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, errors.New("go list: no packages")
	}
	return pkgs, nil
})

// listPackages is every package of the module as `go list` reads it.
func listPackages(t *testing.T) []pkg {
	pkgs, err := listed()
	require.NoError(t, err)
	return pkgs
}

// violations are the imports of pkgs that cross a wall of the rules, one line each.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		dir, _ := folder(p.ImportPath)
		r, ok := ruleOf(dir)
		if !ok {
			out = append(out, fmt.Sprintf("%s: no rule holds this folder; add one to tests/architecture/rules_test.go", dir))
			continue
		}
		for _, imp := range p.Imports {
			if slices.Contains(r.mayNotImport, imp) {
				out = append(out, fmt.Sprintf("%s imports %s: the rule of %s/ imports none of %v (%s)", dir, imp, r.folder, r.mayNotImport, r.why))
			}
			to, ours := folder(imp)
			if !ours {
				continue
			}
			if !slices.ContainsFunc(r.mayImport, func(f string) bool { return holds(f, to) }) {
				out = append(out, fmt.Sprintf("%s imports %s: the rule of %s/ allows only %v (%s)",
					dir, to, r.folder, r.mayImport, r.why))
			}
		}
		for _, never := range r.mayNotLink {
			root := strings.TrimSuffix(never, "/")
			var linked []string
			for _, dep := range p.Deps {
				if dep == root || strings.HasPrefix(dep, root+"/") {
					linked = append(linked, dep)
				}
			}
			if len(linked) > 0 {
				out = append(out, fmt.Sprintf("%s links %s (%d packages under %s): the rule of %s/ links nothing there (%s)",
					dir, linked[0], len(linked), never, r.folder, r.why))
			}
		}
	}
	return out
}

// TestImportsKeepTheLayers: no package of the module imports across a wall of the rules.
func TestImportsKeepTheLayers(t *testing.T) {
	for _, v := range violations(listPackages(t)) {
		t.Error(v)
	}
}

// TestEveryPackageSaysWhatItIs: every package of the library and the doors has a package
// comment, which `go doc` and pkg.go.dev show first (tests/, examples/ and the generated SDK
// aside).
func TestEveryPackageSaysWhatItIs(t *testing.T) {
	for _, p := range listPackages(t) {
		dir, _ := folder(p.ImportPath)
		if holds("tests", dir) || holds("examples", dir) || holds("sdk", dir) {
			continue
		}
		assert.NotEmpty(t, p.Doc, "%s has no package comment (// Package ... or // Command ...)", dir)
	}
}

// TestRulesCatchAnImportUpward: the check itself refuses the imports the layers forbid (the input
// model importing the core's render, the core Pulumi, a component a test helper) and a folder no
// rule holds, and allows what they allow.
func TestRulesCatchAnImportUpward(t *testing.T) {
	p := func(dir string, imports ...string) pkg {
		q := pkg{ImportPath: module + "/" + dir}
		for _, i := range imports {
			if std, ok := strings.CutPrefix(i, "std:"); ok {
				q.Imports = append(q.Imports, std)
				q.Deps = append(q.Deps, std)
			} else if strings.Contains(i, ".") {
				q.Imports = append(q.Imports, i)
				q.Deps = append(q.Deps, i)
			} else {
				q.Imports = append(q.Imports, module+"/"+i)
			}
		}
		return q
	}
	for _, bad := range []pkg{
		p("api", "core/render"),
		p("api/vllm", "api"),
		p("core/render", "github.com/pulumi/pulumi/sdk/v3/go/pulumi"),
		p("core/render", "std:os"),
		p("core/diagnosis", "std:net/http"),
		p("components/inferenceservice", "tests/kit/pulumimock"),
		p("examples/go/story1-monolithic", "core/render"),
		p("nowhere/new"),
	} {
		assert.Len(t, violations([]pkg{bad}), 1, "%s importing %v", bad.ImportPath, bad.Imports)
	}
	for _, good := range []pkg{
		p("api", "api/vllm", "mirror/karpenter"),
		p("core/render", "api", "api/eppconfig", "mirror/keda", "std:fmt"),
		p("cmd/fusioninfer", "core/render", "std:os"),
		p("tests/e2e/harness", "tests/kit/enginetest", "tests/cluster"),
	} {
		assert.Empty(t, violations([]pkg{good}), "%s importing %v", good.ImportPath, good.Imports)
	}
}

// The generated parts of docs/architecture.md lie between these lines.
func markers(name string) (begin, end string) {
	return "<!-- begin " + name + ": written by `go test ./tests/architecture -update` from tests/architecture/rules_test.go -->",
		"<!-- end " + name + " -->"
}

func code(s string) string { return "`" + s + "`" }

func codes(list []string, slash string) string {
	if len(list) == 0 {
		return "nothing of ours"
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = code(s + slash)
	}
	return strings.Join(out, ", ")
}

// rulesTable is the rules as docs/architecture.md shows them.
func rulesTable() string {
	var b strings.Builder
	b.WriteString("| folder | may import of this module | links nothing under | why |\n|---|---|---|---|\n")
	sorted := slices.Clone(rules)
	slices.SortFunc(sorted, func(a, b rule) int { return strings.Compare(a.folder, b.folder) })
	for _, r := range sorted {
		never := "—"
		if len(r.mayNotLink) > 0 {
			never = codes(r.mayNotLink, "")
		}
		if len(r.mayNotImport) > 0 {
			never += "; imports none of " + codes(r.mayNotImport, "")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code(r.folder+"/"), codes(r.mayImport, "/"), never, r.why)
	}
	return b.String()
}

// importsTable is each package's imports of the module, as `go list` reads them (the generated
// SDK left out).
func importsTable(pkgs []pkg) string {
	var b strings.Builder
	b.WriteString("| package | imports of this module |\n|---|---|\n")
	for _, p := range pkgs {
		dir, _ := folder(p.ImportPath)
		if holds("sdk", dir) {
			continue
		}
		var ours []string
		for _, imp := range p.Imports {
			if to, ok := folder(imp); ok {
				ours = append(ours, to)
			}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", code(dir), codes(ours, ""))
	}
	return b.String()
}

// TestArchitectureDocumentShowsTheRules: docs/architecture.md's tables of the rules and of the
// imports are the ones this package writes.
func TestArchitectureDocumentShowsTheRules(t *testing.T) {
	path := filepath.Join(testcli.Root(), "docs", "architecture.md")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(data)
	for _, part := range []struct{ name, table string }{
		{"rules", rulesTable()},
		{"imports", importsTable(listPackages(t))},
	} {
		begin, end := markers(part.name)
		re := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(begin) + `\n(.*?)` + regexp.QuoteMeta(end))
		m := re.FindStringSubmatchIndex(doc)
		require.NotNil(t, m, "docs/architecture.md has the lines %q and %q around its table of %s", begin, end, part.name)
		if *update {
			doc = doc[:m[2]] + part.table + doc[m[3]:]
			continue
		}
		assert.Equal(t, part.table, doc[m[2]:m[3]],
			"docs/architecture.md's table of %s is stale: go test ./tests/architecture -update", part.name)
	}
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	}
}

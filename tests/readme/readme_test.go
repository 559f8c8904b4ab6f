// SPDX-License-Identifier: Apache-2.0

// Package readme holds the README to what the project does: its length, and the `make demo`
// summary it shows, which must be what the CLI prints.
package readme

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// demoStory is the Makefile's DEMO_STORY.
const demoStory = "examples/manifests/story4-disaggregated-multinode.yaml"

func readme(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testcli.Root(), "README.md"))
	require.NoError(t, err)
	return string(data)
}

// TestREADMEIsShort: reference goes to docs/; the README stays under 250 lines.
func TestREADMEIsShort(t *testing.T) {
	assert.Less(t, strings.Count(readme(t), "\n"), 250, "README.md: move reference to docs/")
}

// TestREADMEShowsWhatMakeDemoPrints: the summary lines in the README's `make demo` sample are the
// CLI's, line for line.
func TestREADMEShowsWhatMakeDemoPrints(t *testing.T) {
	text := readme(t)
	_, after, found := strings.Cut(text, "`make demo` prints")
	require.True(t, found, "the README shows what make demo prints")
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "---\n")
	want := strings.TrimSpace(block)
	require.NotEmpty(t, want)

	cmd := exec.Command(testcli.Binary(t), "render", "-f", demoStory, "--summary")
	cmd.Dir = testcli.Root()
	out, err := cmd.Output()
	require.NoError(t, err)
	got, _, _ := strings.Cut(string(out), "---\n")
	assert.Equal(t, want, strings.TrimSpace(got), "README.md's make demo sample")
}

// TestREADMEInstallsTheSDKsAsCIDoes: the README's TypeScript and Python install commands are, word
// for word, the ones `make test-packages` runs in its fresh projects (with the checkout's path for
// `<checkout>` and the VERSION file's version), after the `make sdk-packages` the README names.
func TestREADMEInstallsTheSDKsAsCIDoes(t *testing.T) {
	text := readme(t)
	makefile, err := os.ReadFile(filepath.Join(testcli.Root(), "Makefile"))
	require.NoError(t, err)
	version, err := os.ReadFile(filepath.Join(testcli.Root(), "VERSION"))
	require.NoError(t, err)
	require.Contains(t, text, "`make sdk-packages`", "README builds the packages with make sdk-packages")
	recipe := makeRecipe(t, string(makefile), "test-packages: sdk-packages") // built as the README builds them
	for _, prefix := range []string{"npm install <checkout>/", "pip install <checkout>/"} {
		_, after, found := strings.Cut(text, "`"+prefix)
		require.True(t, found, "README has `%s...`", prefix)
		command, _, _ := strings.Cut(after, "`")
		command = prefix + command
		asRun := strings.ReplaceAll(command, "<checkout>", "$(CURDIR)")
		asRun = strings.ReplaceAll(asRun, strings.TrimSpace(string(version)), "$(VERSION)")
		asRun = strings.ReplaceAll(asRun, "bin/fusioninfer-pulumi-fusioninfer-$(VERSION).tgz", "$(NPM_PACKAGE)")
		asRun = strings.ReplaceAll(asRun, "bin/pulumi_fusioninfer-$(VERSION)-py3-none-any.whl", "$(PY_WHEEL)")
		assert.Contains(t, recipe, asRun+" ", "make test-packages runs the README's %q", command)
	}
}

// TestREADMEFloorsAreWhatTheSDKsRequire: the README's row for the Pulumi CLI and the
// pulumi-kubernetes provider names what the generated SDKs ask for (the Node and Python SDKs'
// Pulumi SDK, their pulumi-kubernetes), so a user who installs what the README says gets what the
// SDKs accept; and the two SDKs ask for the same: a floor and the next major version as the cap
// (npm's ^X.Y.Z is pip's >=X.Y.Z,<X+1.0.0), so npm and pip pick from the same releases.
func TestREADMEFloorsAreWhatTheSDKsRequire(t *testing.T) {
	read := func(path string) string {
		data, err := os.ReadFile(filepath.Join(testcli.Root(), path))
		require.NoError(t, err)
		return string(data)
	}
	var row string
	for _, line := range strings.Split(readme(t), "\n") {
		if strings.HasPrefix(line, "| Pulumi CLI, pulumi-kubernetes provider |") {
			row = line
		}
	}
	require.NotEmpty(t, row, "README has the Pulumi row of its requirements")
	var pkg struct{ Dependencies map[string]string }
	require.NoError(t, json.Unmarshal([]byte(read("sdk/nodejs/package.json")), &pkg))
	pyproject := read("sdk/python/pyproject.toml")
	for _, dep := range []struct{ what, npm, pip, readme string }{
		{"the Pulumi SDK", "@pulumi/pulumi", "pulumi", "3.231 or later"},
		{"pulumi-kubernetes", "@pulumi/kubernetes", "pulumi_kubernetes", "; 4.33 or later, below 5 "},
	} {
		npm := pkg.Dependencies[dep.npm]
		floor, isCaret := strings.CutPrefix(npm, "^")
		require.True(t, isCaret, "Node's %s is a floor up to the next major version (^X.Y.Z), not %q", dep.npm, npm)
		major, _, _ := strings.Cut(floor, ".")
		next, err := strconv.Atoi(major)
		require.NoError(t, err, "Node's %s: %q", dep.npm, npm)
		_, pip, found := strings.Cut(pyproject, `"`+dep.pip+`>=`)
		require.True(t, found, "Python's %s has a floor", dep.pip)
		pip, _, _ = strings.Cut(pip, `"`)
		assert.Equal(t, fmt.Sprintf("%s,<%d.0.0", floor, next+1), pip, "Python's %s asks for what Node's %s does (%s)", dep.pip, dep.npm, npm)

		assert.Contains(t, row, dep.readme, "README names what the SDKs ask of %s", dep.what)
		readmeFloor, _, _ := strings.Cut(strings.TrimPrefix(dep.readme, "; "), " or later")
		assert.True(t, strings.HasPrefix(floor, readmeFloor+"."), "the SDKs' floor of %s is %s, README says %s", dep.what, floor, readmeFloor)
	}
	assert.Contains(t, row, "below 5 (what the SDKs require)", "README says its pulumi-kubernetes range is the SDKs'")
}

// makeRecipe is the Makefile's rule that starts with the line "target" (its prerequisites may
// follow), up to the next blank line.
func makeRecipe(t *testing.T, makefile, target string) string {
	t.Helper()
	_, after, found := strings.Cut(makefile, "\n"+target)
	require.True(t, found, "the Makefile has a rule %s", target)
	recipe, _, _ := strings.Cut(after, "\n\n")
	return recipe
}

// TestYAMLExamplesAddThePackageAsDocsSay: each YAML example's `pulumi package add` is
// docs/languages.md's, at the VERSION file's tag, so the plugin built is the one the example was
// written for (without a version, Pulumi builds the default branch).
func TestYAMLExamplesAddThePackageAsDocsSay(t *testing.T) {
	root := testcli.Root()
	version, err := os.ReadFile(filepath.Join(root, "VERSION"))
	require.NoError(t, err)
	languages, err := os.ReadFile(filepath.Join(root, "docs/languages.md"))
	require.NoError(t, err)
	_, after, found := strings.Cut(string(languages), "`pulumi package add ")
	require.True(t, found, "docs/languages.md says how to add the package from source")
	documented, _, _ := strings.Cut(after, "`")
	require.Contains(t, documented, "@v{VERSION}", "docs/languages.md adds the package at a tag")
	want := "pulumi package add " + strings.ReplaceAll(documented, "{VERSION}", strings.TrimSpace(string(version)))

	programs, err := filepath.Glob(filepath.Join(root, "examples/yaml/*/Pulumi.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, programs)
	for _, program := range programs {
		data, err := os.ReadFile(program)
		require.NoError(t, err)
		var commands []string
		for _, line := range strings.Split(string(data), "\n") {
			if _, command, found := strings.Cut(line, "pulumi package add"); found {
				commands = append(commands, strings.TrimSpace("pulumi package add"+command))
			}
		}
		assert.Equal(t, []string{want}, commands, "%s adds the package as docs/languages.md does", program)
	}
}

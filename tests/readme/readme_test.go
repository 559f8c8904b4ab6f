// Package readme holds the README to what the project does: its length, and the `make demo`
// summary it shows, which must be what the CLI prints.
package readme

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/testcli"
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

// TestREADMEFloorsAreWhatTheSDKsPin: the README's row for the Pulumi CLI and the pulumi-kubernetes
// provider names the floors the generated SDKs ask for (the Node and Python SDKs' Pulumi SDK, their
// pulumi-kubernetes), so a user who installs what the README says gets what the SDKs accept.
func TestREADMEFloorsAreWhatTheSDKsPin(t *testing.T) {
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
	for _, pin := range []struct{ what, readme, sdk string }{
		{"Node's @pulumi/pulumi", "3.231 or later", pkg.Dependencies["@pulumi/pulumi"]},
		{"Node's @pulumi/kubernetes", "; 4.33 ", pkg.Dependencies["@pulumi/kubernetes"]},
	} {
		assert.Contains(t, row, pin.readme, "README names the floor of %s", pin.what)
		floor := strings.TrimSuffix(strings.TrimSuffix(strings.Trim(pin.readme, "; "), " or later"), " ")
		assert.True(t, strings.HasPrefix(strings.TrimPrefix(pin.sdk, "^"), floor+"."), "%s is %q, README says %s", pin.what, pin.sdk, floor)
	}
	assert.Contains(t, pyproject, `"pulumi>=3.231.0,`, "Python's Pulumi SDK floor is README's 3.231")
	assert.Contains(t, pyproject, `"pulumi_kubernetes>=4.33.0"`, "Python's pulumi-kubernetes floor is README's 4.33")
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

// Package readme holds the README to what the project does: its length, and the `make demo`
// summary it shows, which must be what the CLI prints.
package readme

import (
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

// SPDX-License-Identifier: Apache-2.0

// Package docs holds the docs to what the project is: docs/cli.md's synopsis names every flag of
// every command, and each command it shows with its output prints that output (as tests/readme
// does for the README); docs/architecture.md names paths that exist.
package docs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

func cliDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testcli.Root(), "docs", "cli.md"))
	require.NoError(t, err)
	return string(data)
}

// codeBlocks are the fenced blocks of a Markdown text, without their fences.
func codeBlocks(text string) []string {
	var blocks []string
	for {
		_, after, found := strings.Cut(text, "```")
		if !found {
			return blocks
		}
		_, after, _ = strings.Cut(after, "\n") // the fence's language
		block, rest, _ := strings.Cut(after, "```")
		blocks = append(blocks, block)
		text = rest
	}
}

// flagPattern is a flag as help and the synopsis write it: -f, --kubeconfig.
var flagPattern = regexp.MustCompile(`(?:^|[\s\[(|])(--?[a-z][a-z-]*)`)

// helpFlags are the flags `fusioninfer COMMAND --help` lists, each with its forms (-f, --filename),
// without --help.
func helpFlags(t *testing.T, command ...string) [][]string {
	t.Helper()
	out, err := exec.Command(testcli.Binary(t), append(command, "--help")...).Output()
	require.NoError(t, err)
	_, flags, found := strings.Cut(string(out), "\nFlags:\n")
	require.True(t, found, "fusioninfer %s --help lists its flags", strings.Join(command, " "))
	flags, _, _ = strings.Cut(flags, "\n\n")
	var all [][]string
	for _, line := range strings.Split(flags, "\n") {
		var forms []string
		for _, word := range strings.Fields(strings.ReplaceAll(line, ",", " ")) {
			if !strings.HasPrefix(word, "-") {
				break
			}
			forms = append(forms, word)
		}
		if len(forms) > 0 && !slices.Contains(forms, "--help") {
			all = append(all, forms)
		}
	}
	return all
}

var commandWord = regexp.MustCompile(`^[a-z]+$`)

// TestCLISynopsisNamesEveryFlag: each line of docs/cli.md's synopsis names every flag the command
// has (in its long or its short form) and none it has not.
func TestCLISynopsisNamesEveryFlag(t *testing.T) {
	synopsis := codeBlocks(cliDoc(t))[0]
	commands := 0
	for _, line := range strings.Split(strings.TrimSpace(synopsis), "\n") {
		words := strings.Fields(line)
		require.Equal(t, "fusioninfer", words[0], "a synopsis line: %s", line)
		var command []string
		for _, w := range words[1:] {
			if !commandWord.MatchString(w) {
				break
			}
			command = append(command, w)
		}
		name := strings.Join(command, " ")
		commands++
		var shown []string
		for _, m := range flagPattern.FindAllStringSubmatch(line, -1) {
			shown = append(shown, m[1])
		}
		has := helpFlags(t, command...)
		for _, f := range shown {
			assert.True(t, slices.ContainsFunc(has, func(forms []string) bool { return slices.Contains(forms, f) }),
				"docs/cli.md's synopsis of %q shows %s, which it does not have", name, f)
		}
		for _, forms := range has {
			assert.True(t, slices.ContainsFunc(forms, func(f string) bool { return slices.Contains(shown, f) }),
				"docs/cli.md's synopsis of %q leaves out %s", name, strings.Join(forms, ", "))
		}
	}
	assert.Equal(t, 4, commands, "render, plan, status, platform render")
}

// example is a command docs/cli.md shows ("$ fusioninfer ...", with "# exit N" when it is not 0)
// and the lines it prints, stdout and stderr as a terminal shows them.
type example struct {
	command string
	exit    int
	output  string
}

var exitComment = regexp.MustCompile(`\s+# exit (\d+)$`)

func examples(t *testing.T) []example {
	t.Helper()
	var out []example
	for _, block := range codeBlocks(cliDoc(t)) {
		if !strings.HasPrefix(block, "$ ") {
			continue
		}
		var ex *example
		for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
			if command, ok := strings.CutPrefix(line, "$ "); ok {
				if ex != nil {
					out = append(out, *ex)
				}
				ex = &example{command: command}
				if m := exitComment.FindStringSubmatch(command); m != nil {
					ex.exit, _ = strconv.Atoi(m[1])
					ex.command = strings.TrimSuffix(command, m[0])
				}
				continue
			}
			ex.output += line + "\n"
		}
		out = append(out, *ex)
	}
	return out
}

// TestCLIExamplesPrintWhatTheDocShows: every command docs/cli.md shows with its output is run
// (in a directory of its own that has the repository's examples/, with this checkout's
// fusioninfer first on PATH) and prints that output, with that exit status. `fusioninfer status`
// reads a cluster: its sample is the e2e suite's, recorded there, and is not run here.
func TestCLIExamplesPrintWhatTheDocShows(t *testing.T) {
	bin := filepath.Dir(testcli.Binary(t))
	ran := 0
	for _, ex := range examples(t) {
		if strings.HasPrefix(ex.command, "fusioninfer status") {
			continue
		}
		t.Run(ex.command, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Symlink(filepath.Join(testcli.Root(), "examples"), filepath.Join(dir, "examples")))
			cmd := exec.Command("/bin/sh", "-c", ex.command)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, ex.output, string(out), "docs/cli.md shows what `%s` prints", ex.command)
			assert.Equal(t, ex.exit, code, "docs/cli.md's exit status of `%s`", ex.command)
		})
		ran++
	}
	assert.NotZero(t, ran, "docs/cli.md shows commands with their output")
}

// repoPath is a backquoted path of the repository as docs/architecture.md names packages and
// files: `core/render`, `components/kubetoken`, `tests/e2e/harness`, under any top folder of
// the module.
var repoPath = regexp.MustCompile("`((?:api|cmd|components|core|deploy|docs|examples|internal|mirror|provider|sdk|tests|third_party)/[A-Za-z0-9_./-]+)`")

// TestArchitectureNamesPathsThatExist: every package and file docs/architecture.md names by its
// path is there.
func TestArchitectureNamesPathsThatExist(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testcli.Root(), "docs", "architecture.md"))
	require.NoError(t, err)
	matches := repoPath.FindAllStringSubmatch(string(data), -1)
	require.NotEmpty(t, matches)
	for _, m := range matches {
		_, err := os.Stat(filepath.Join(testcli.Root(), strings.TrimSuffix(m[1], "/")))
		assert.NoError(t, err, "docs/architecture.md names %s", m[1])
	}
}

// TestCLIStatusExamplesGiveAManifest: `fusioninfer status` reads a cluster, so its samples are not
// run; the manifest each gives (-f, with its -n) is one render reads, an InferenceService, not
// render's output.
func TestCLIStatusExamplesGiveAManifest(t *testing.T) {
	bin := testcli.Binary(t)
	ran := 0
	for _, ex := range examples(t) {
		args, ok := strings.CutPrefix(ex.command, "fusioninfer status ")
		if !ok {
			continue
		}
		ran++
		dir := t.TempDir()
		require.NoError(t, os.Symlink(filepath.Join(testcli.Root(), "examples"), filepath.Join(dir, "examples")))
		words := strings.Fields(args)
		var render []string
		for i := 0; i+1 < len(words); i++ {
			if words[i] == "-f" || words[i] == "-n" {
				render = append(render, words[i], words[i+1])
			}
		}
		cmd := exec.Command(bin, append([]string{"render"}, render...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "docs/cli.md: `%s` gives a manifest render reads: %s", ex.command, firstLine(string(out)))
	}
	assert.NotZero(t, ran, "docs/cli.md shows status")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

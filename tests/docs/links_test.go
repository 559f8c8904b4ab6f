// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// linkTarget is a Markdown link's target, "](target)"; a target without its closing parenthesis
// (the text after it is not a target) is a link GitHub does not render.
var linkTarget = regexp.MustCompile(`\]\(([^)\s]*)(\)?)`)

// heading is a Markdown ATX heading; explicitAnchor an HTML anchor a doc sets itself.
var (
	heading        = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	explicitAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// inlineCode is a code span, where "](x)" is no link.
var inlineCode = regexp.MustCompile("`[^`]*`")

// withoutFences is a Markdown text without its fenced blocks, where "# x" is no heading and
// "](x)" no link.
func withoutFences(text string) string {
	var out strings.Builder
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			out.WriteString("\n")
			continue
		}
		if !inFence {
			out.WriteString(line)
		}
		out.WriteString("\n")
	}
	return out.String()
}

// anchors are the fragments GitHub gives a Markdown file's headings: lowercased, punctuation but
// '-' and '_' dropped, spaces made '-', a repeated one suffixed -1, -2 (github/cmark-gfm's
// anchor rules, as github.com renders them), and the anchors the file sets itself.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	text = withoutFences(text)
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		title := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(m[1], "$1") // a link's text
		var slug strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				slug.WriteRune(r)
			}
		}
		anchor := slug.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor += "-" + string(rune('0'+n))
		} else {
			seen[anchor] = 1
		}
		out[anchor] = true
	}
	for _, m := range explicitAnchor.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// TestRelativeLinksResolve: every relative link in README.md and docs/**/*.md is closed, names a
// file or directory of the repository, and, with a #fragment into a Markdown file, a heading of it.
func TestRelativeLinksResolve(t *testing.T) {
	root := testcli.Root()
	files := []string{filepath.Join(root, "README.md")}
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	}))
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, file)
		for _, m := range linkTarget.FindAllStringSubmatch(inlineCode.ReplaceAllString(withoutFences(string(data)), "``"), -1) {
			target := m[1]
			if m[2] == "" {
				t.Errorf("%s: the link to %q has no closing ')'", rel, target)
				continue
			}
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, fragment, _ := strings.Cut(target, "#")
			linked := file
			if path != "" {
				linked = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(linked); err != nil {
					t.Errorf("%s: the link to %q names no file", rel, target)
					continue
				}
			}
			if fragment == "" || !strings.HasSuffix(linked, ".md") {
				continue
			}
			linkedText, err := os.ReadFile(linked)
			require.NoError(t, err)
			assert.True(t, anchors(string(linkedText))[fragment], "%s: the link to %q names no heading of %s", rel, target, filepath.Base(linked))
		}
	}
	assert.NotZero(t, checked, "the docs link to each other")
}

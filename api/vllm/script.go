// SPDX-License-Identifier: Apache-2.0

package vllm

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"mvdan.cc/sh/v3/syntax"
)

// ServerCommandLine is the command line vLLM's parser reads: the container's command and args,
// or, when the container runs a shell script (`sh -c "... exec vllm serve m --port 8123"`), the
// words of the script's first command that starts the server, as the shell passes them (quotes
// removed). A word the shell expands when it runs (`$PORT`, `$(...)`) is kept as its source text:
// Expanded tells it apart. A script that does not parse, or starts no server, is read as the
// container's command line.
func ServerCommandLine(c *corev1.Container) []string {
	if !IsShellScript(c) {
		return CommandLine(c)
	}
	script, ok := shellScript(c)
	if !ok {
		return CommandLine(c)
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		return CommandLine(c)
	}
	var server []string
	syntax.Walk(file, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || server != nil {
			return server == nil
		}
		words := make([]string, 0, len(call.Args))
		for _, w := range call.Args {
			words = append(words, shellWord(w, script))
		}
		for len(words) > 0 && (words[0] == "exec" || path.Base(words[0]) == "env") {
			words = words[1:] // `exec vllm serve`, `env X=1 vllm serve`
		}
		for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
			words = words[1:] // env's assignments
		}
		if len(words) > 0 && RunsServer(&corev1.Container{Command: words}) {
			server = words
		}
		return true
	})
	if server == nil {
		return CommandLine(c)
	}
	return server
}

// Expanded reports whether a word of ServerCommandLine is one the shell expands when the script
// runs, whose value cannot be read from the template.
func Expanded(word string) bool { return strings.ContainsAny(word, "$`") }

// shellScript is the script a shell container runs: the word after the option that holds "c"
// (`sh -c SCRIPT`, `bash -ec SCRIPT`).
func shellScript(c *corev1.Container) (string, bool) {
	words, at := CommandLine(c), scriptOption(c)
	if at == 0 || at+1 >= len(words) {
		return "", false
	}
	return words[at+1], true
}

// shellWord is a word as the shell passes it when it holds only literals and quotes, else its
// source text.
func shellWord(w *syntax.Word, script string) string {
	var b strings.Builder
	var literal func(parts []syntax.WordPart) bool
	literal = func(parts []syntax.WordPart) bool {
		for _, part := range parts {
			switch p := part.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				if !literal(p.Parts) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	if literal(w.Parts) {
		return b.String()
	}
	return script[w.Pos().Offset():w.End().Offset()]
}

// FlagSSLCertfile is the server's TLS certificate: given, vLLM's uvicorn serves HTTPS on the
// serving port (vllm/entrypoints/openai/api_server.py passes ssl_certfile to uvicorn, whose
// Config.load makes an SSL context whenever ssl_certfile is set).
var FlagSSLCertfile = Flag{Name: "--ssl-certfile"}

// ServesTLS reports whether the server answers HTTPS, not plain HTTP: its command line, or the
// server command of its shell script, gives --ssl-certfile.
func ServesTLS(c *corev1.Container) bool {
	v, found := FlagSSLCertfile.Value(ServerCommandLine(c))
	return found && v != ""
}

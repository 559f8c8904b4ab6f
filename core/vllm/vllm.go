// Package vllm reads vLLM's command line as a pod template gives it: flags in their argparse
// forms, the parallelism sizes, and whether the command is a shell script. Validation and the core
// both read the server's flags through it.
package vllm

import (
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// CommandLine is a container's command and args, as one list.
func CommandLine(c *corev1.Container) []string {
	return append(append([]string{}, c.Command...), c.Args...)
}

// IsShellScript reports whether the container runs a shell script (`sh -c "..."`), whose
// server command line cannot be safely extended with more flags.
func IsShellScript(c *corev1.Container) bool {
	if len(c.Command) == 0 {
		return false
	}
	switch path.Base(c.Command[0]) {
	case "sh", "bash", "dash", "ash", "zsh":
	default:
		return false
	}
	for _, a := range append(append([]string{}, c.Command[1:]...), c.Args...) {
		if a == "-c" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c")) {
			return true
		}
	}
	return false
}

// RunsServer reports whether a container is vLLM's server, by what it runs: its command line calls
// the vllm CLI (`vllm serve`, also by a path or inside a shell script) or one of vLLM's entrypoint
// modules (`python -m vllm.entrypoints.openai.api_server`), or it has no command and its image is
// vLLM's, a repository named vllm-* (vllm/vllm-openai, whose entrypoint is `vllm serve`).
func RunsServer(c *corev1.Container) bool {
	if len(c.Command) == 0 && isServerImage(c.Image) {
		return true
	}
	var fields []string
	for _, word := range CommandLine(c) {
		fields = append(fields, strings.Fields(word)...) // a shell script is one word
	}
	for i, w := range fields {
		if strings.HasPrefix(w, entrypointsModule) || (path.Base(w) == "vllm" && i+1 < len(fields) && fields[i+1] == serveWord) {
			return true
		}
	}
	return false
}

// entrypointsModule is the package of vLLM's server modules, run with `python -m`.
const entrypointsModule = "vllm.entrypoints"

// isServerImage: the image's repository, without registry, tag or digest, is vllm or vllm-*.
func isServerImage(image string) bool {
	image, _, _ = strings.Cut(image, "@")
	repository := path.Base(image)
	repository, _, _ = strings.Cut(repository, ":")
	return repository == "vllm" || strings.HasPrefix(repository, "vllm-")
}

// HasFlag reports whether a boolean flag is on the command line ("--flag" or "--flag=value").
func HasFlag(c *corev1.Container, flag string) bool {
	for _, w := range CommandLine(c) {
		if w == flag || strings.HasPrefix(w, flag+"=") {
			return true
		}
	}
	return false
}

// ParallelFlags are vLLM's parallelism flags, each with its short alias.
var ParallelFlags = struct{ Tensor, Pipeline, Data [2]string }{
	Tensor:   [2]string{"--tensor-parallel-size", "-tp"},
	Pipeline: [2]string{"--pipeline-parallel-size", "-pp"},
	Data:     [2]string{"--data-parallel-size", "-dp"},
}

// FlagValue finds a command-line flag in args, in the forms `--flag value` and `--flag=value`,
// under any of its names. The last occurrence wins, as in Python's argparse.
func FlagValue(args []string, names ...string) (value string, found bool) {
	for i := 0; i < len(args); i++ {
		for _, name := range names {
			switch {
			case args[i] == name && i+1 < len(args):
				value, found = args[i+1], true
			case strings.HasPrefix(args[i], name+"="):
				value, found = strings.TrimPrefix(args[i], name+"="), true
			}
		}
	}
	return value, found
}

// ParallelSize reads one vLLM parallelism flag: (1, false, nil) when absent.
func ParallelSize(args []string, names [2]string) (int64, bool, error) {
	v, found := FlagValue(args, names[:]...)
	if !found {
		return 1, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, true, &ParallelSizeError{Flag: names[0], Value: v}
	}
	return n, true, nil
}

// ParallelSizeError is a parallelism flag whose value is not a positive integer.
type ParallelSizeError struct{ Flag, Value string }

func (e *ParallelSizeError) Error() string {
	return e.Flag + " " + strconv.Quote(e.Value) + ": must be a positive integer"
}

// ModelFlag is vLLM's flag for the model; `vllm serve` also takes it as its first positional argument.
const ModelFlag = "--model"

// serveWord is the subcommand whose first positional argument is the model.
const serveWord = "serve"

// Model is the model the server's command line names: --model's value, else the positional
// argument of `vllm serve` (which is the vllm/vllm-openai image's entrypoint when the container
// has no command).
func Model(c *corev1.Container) (string, bool) {
	if v, found := FlagValue(CommandLine(c), ModelFlag); found {
		return v, true
	}
	words, i := positionalModel(c)
	if i < 0 {
		return "", false
	}
	return words[i], true
}

// positionalModel is the command line and the index of `vllm serve`'s positional model in it, -1 if none.
func positionalModel(c *corev1.Container) ([]string, int) {
	words := CommandLine(c)
	start := -1
	switch {
	case len(c.Command) == 0:
		start = 0 // the image's entrypoint is `vllm serve`
	default:
		for i, w := range words {
			if w == serveWord && i > 0 && path.Base(words[i-1]) == "vllm" {
				start = i + 1
				break
			}
		}
	}
	if start < 0 || start >= len(words) || strings.HasPrefix(words[start], "-") {
		return words, -1
	}
	return words, start
}

// SetModel points the server's command line at model: in place of --model's value (every
// occurrence) or of `vllm serve`'s positional model, else as a --model flag at the end.
func SetModel(c *corev1.Container, model string) {
	words, at := positionalModel(c)
	replaced := false
	for i := 0; i < len(words); i++ {
		switch {
		case words[i] == ModelFlag && i+1 < len(words):
			words[i+1] = model
			replaced = true
		case strings.HasPrefix(words[i], ModelFlag+"="):
			words[i] = ModelFlag + "=" + model
			replaced = true
		}
	}
	switch {
	case !replaced && at >= 0:
		words[at] = model
	case !replaced:
		words = append(words, ModelFlag, model)
	}
	n := len(c.Command)
	c.Command, c.Args = nilIfEmpty(words[:n:n]), nilIfEmpty(words[n:])
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

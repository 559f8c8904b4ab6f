// SPDX-License-Identifier: Apache-2.0

// Package vllm reads vLLM's command line as a pod template gives it: flags in their argparse
// forms, the parallelism sizes, and whether the command is a shell script. Validation and the core
// both read the server's flags through it.
package vllm

import (
	"path"
	"slices"
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
func IsShellScript(c *corev1.Container) bool { return scriptOption(c) > 0 }

// scriptOption is the place in CommandLine of the shell's option that holds "c" (`-c`, `-ec`):
// the script is the word after it. 0 when the container runs no shell script.
func scriptOption(c *corev1.Container) int {
	if len(c.Command) == 0 {
		return 0
	}
	switch path.Base(c.Command[0]) {
	case "sh", "bash", "dash", "ash", "zsh":
	default:
		return 0
	}
	for i, a := range CommandLine(c) {
		if i > 0 && (a == "-c" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c"))) {
			return i
		}
	}
	return 0
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

// HasFlag reports whether a container's command line gives a flag (Flag.In).
func HasFlag(c *corev1.Container, flag string) bool { return Flag{Name: flag}.In(CommandLine(c)) }

// splitFlag is the flag a command-line word gives, as vLLM's parser reads it, and the value the
// word carries (`--flag=value`). vLLM reads a long flag's underscores as dashes, up to its first
// "." (vllm/utils/argparse_utils.py, FlexibleArgumentParser.parse_args): `--tensor_parallel_size`
// is `--tensor-parallel-size`, and `--kv_transfer_config.kv_connector` sets the key kv_connector
// of --kv-transfer-config. A short flag ("-tp") and a word that is no flag are as given.
func splitFlag(word string) (name, value string, hasValue bool) {
	name, value, hasValue = strings.Cut(word, "=")
	return canonicalName(name), value, hasValue
}

// canonicalName is a flag's name as vLLM declares it: a long flag's underscores before its first
// "." read as dashes.
func canonicalName(name string) string {
	if !strings.HasPrefix(name, "--") {
		return name
	}
	key, rest, dotted := strings.Cut(name[2:], ".")
	name = "--" + strings.ReplaceAll(key, "_", "-")
	if dotted {
		name += "." + rest
	}
	return name
}

// FlagNames are the flags a command line gives, as vLLM declares them (long flags with dashes),
// in order, each once.
func FlagNames(words []string) []string {
	var names []string
	for _, w := range words {
		if name, _, _ := splitFlag(w); strings.HasPrefix(name, "-") && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// FlagValue finds a command-line flag in args, in the forms `--flag value` and `--flag=value`,
// under any of its names and in either spelling vLLM accepts (splitFlag). The last occurrence
// wins, as in Python's argparse.
func FlagValue(args []string, names ...string) (value string, found bool) {
	for i := 0; i < len(args); i++ {
		name, v, hasValue := splitFlag(args[i])
		if !slices.ContainsFunc(names, func(n string) bool { return canonicalName(n) == name }) {
			continue
		}
		switch {
		case hasValue:
			value, found = v, true
		case i+1 < len(args):
			value, found = args[i+1], true
		}
	}
	return value, found
}

// SetFlag gives a flag of the container's command line one value: every occurrence, in either
// spelling, in the command and args is rewritten ("--flag value" and "--flag=value"); absent, it
// is appended to the args.
func SetFlag(c *corev1.Container, flag, value string) {
	flag = canonicalName(flag)
	found := false
	c.Command, c.Args = slices.Clone(c.Command), slices.Clone(c.Args) // the template's own lists stay as they were
	for _, words := range [][]string{c.Command, c.Args} {
		for i := 0; i < len(words); i++ {
			name, _, hasValue := splitFlag(words[i])
			switch {
			case name != flag:
			case hasValue:
				words[i], found = flag+"="+value, true
			case i+1 < len(words):
				words[i+1], found = value, true
				i++
			}
		}
	}
	if !found {
		c.Args = append(c.Args, flag, value)
	}
}

// ParallelSize reads one vLLM parallelism flag: (1, false, nil) when absent.
func ParallelSize(args []string, flag Flag) (int64, bool, error) {
	v, found := flag.Value(args)
	if !found {
		return 1, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, true, &ParallelSizeError{Flag: flag.Name, Value: v}
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
	if _, found := FlagValue(CommandLine(c), ModelFlag); found {
		SetFlag(c, ModelFlag, model)
		return
	}
	_, at := positionalModel(c)
	if at < 0 {
		c.Args = append(slices.Clone(c.Args), ModelFlag, model)
		return
	}
	c.Command, c.Args = slices.Clone(c.Command), slices.Clone(c.Args) // the template's own lists stay as they were
	if n := len(c.Command); at < n {
		c.Command[at] = model
	} else {
		c.Args[at-n] = model
	}
}

// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// launchFlagServices are, for each feature of vllm.LaunchFlags, an example that turns it on and
// the role it turns it on in.
var launchFlagServices = map[string]struct{ file, role string }{
	vllm.ByParallelism:      {"deepseek-wide-ep-pd.yaml", "prefill"},
	vllm.ByMultinodeRay:     {"story3-multinode.yaml", "inference"},
	vllm.ByModel:            {"qwen-s3-streamer.yaml", "chat"},
	vllm.ByModelLoadFormat:  {"qwen-s3-streamer.yaml", "chat"},
	vllm.ByModelAdapters:    {"llama-lora-adapters.yaml", "server"},
	vllm.ByModelFlexibility: {"granite-sleep-wake.yaml", "server"},
	vllm.ByDecodeRouting:    {"qwen-pd-router.yaml", "decode"},
	vllm.ByPreciseRouting:   {"qwen-precise-prefix-cache.yaml", "server"},
	vllm.ByKVCacheOffload:   {"qwen-precise-prefix-cache.yaml", "server"},
}

// TestTheRenderSetsOnlyTheTablesFlags: every flag of a vLLM command line the render makes, in
// every example, is the user's own or a row of vllm.LaunchFlags, the table validation reads.
func TestTheRenderSetsOnlyTheTablesFlags(t *testing.T) {
	inTable := map[string]bool{}
	for _, row := range vllm.LaunchFlags {
		inTable[row.Name] = true
	}
	files := slices.Sorted(func(yield func(string) bool) {
		for _, s := range launchFlagServices {
			if !yield(s.file) {
				return
			}
		}
	})
	for _, file := range slices.Compact(files) {
		tree := story(t, file)
		for _, role := range tree.Service.Spec.Roles {
			if role.Template == nil {
				continue
			}
			users := vllm.FlagNames(vllm.CommandLine(&role.Template.Spec.Containers[api.ServingContainerIndex(&role.Template.Spec)]))
			lines := renderedServerLines(t, tree, role.Name)
			require.NotEmpty(t, lines, "%s %s: a vLLM command line", file, role.Name)
			for _, line := range lines {
				for _, flag := range vllm.FlagNames(line) {
					assert.True(t, slices.Contains(users, flag) || inTable[flag],
						"%s, role %s: the render sets %s, which vllm.LaunchFlags does not list: add it, so validation knows it", file, role.Name, flag)
				}
			}
		}
	}
}

// TestTheTablesOwnedFlagsAreRefused: a flag the render owns is refused in a user's command line,
// in every spelling vLLM accepts, at the server's args, naming it.
func TestTheTablesOwnedFlagsAreRefused(t *testing.T) {
	for _, row := range vllm.LaunchFlags {
		if row.Use != vllm.Owned {
			continue
		}
		fixture, ok := launchFlagServices[row.By]
		require.True(t, ok, "no example turns on %s, which owns %s", row.By, row.Name)
		for _, words := range spellings(row.Flag, "1") {
			svc := story(t, fixture.file).Service
			i := slices.IndexFunc(svc.Spec.Roles, func(r api.Role) bool { return r.Name == fixture.role })
			pod := &svc.Spec.Roles[i].Template.Spec
			server := &pod.Containers[api.ServingContainerIndex(pod)]
			server.Args = append(slices.Clone(server.Args), words...)
			want := fmt.Sprintf("spec.roles[%d].template.spec.containers[%d].args: Invalid value: %q", i, api.ServingContainerIndex(pod), row.Name)
			assert.Contains(t, fmt.Sprint(api.Validate(svc)), want, "%s owns %s, given as %v", row.By, row.Name, words)
		}
	}
}

// TestTheTablesOtherFlagsAreReadInEverySpelling: a flag the render defaults or rewrites is one
// the render sets for its feature; given by the user in another spelling vLLM accepts, it is not
// given a second time (a default), and the render's value is still the one vLLM reads (a
// rewrite: the last, as in argparse).
func TestTheTablesOtherFlagsAreReadInEverySpelling(t *testing.T) {
	for _, row := range vllm.LaunchFlags {
		if row.Use == vllm.Owned {
			continue
		}
		fixture, ok := launchFlagServices[row.By]
		require.True(t, ok, "no example turns on %s, which sets %s", row.By, row.Name)
		t.Run(row.By+" "+row.Name, func(t *testing.T) {
			tree := story(t, fixture.file)
			lines := renderedServerLines(t, tree, fixture.role)
			require.NotEmpty(t, lines)
			rendered := make([]string, len(lines))
			for i, line := range lines {
				require.True(t, row.In(line), "%s sets %s: %v", row.By, row.Name, line)
				rendered[i], _ = row.Value(line)
			}
			svc := tree.Service
			i := slices.IndexFunc(svc.Spec.Roles, func(r api.Role) bool { return r.Name == fixture.role })
			value := rendered[0]
			switch {
			case isSwitch(lines[0], row.Flag):
				value = ""
			case row.Flag == vllm.FlagKVTransferConfig: // a user's connector stays, beside the offload's
				value = `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`
				config, err := api.OffloadedTransferConfig(value, svc.Spec.Roles[i].OffloadBytes())
				require.NoError(t, err)
				for j := range rendered {
					rendered[j] = config
				}
			case row.Flag == vllm.FlagPort: // a user's --port is the port the server serves on; the render moves it
				port, err := api.ServingPort(&svc.Spec.Roles[i].Template.Spec.Containers[api.ServingContainerIndex(&svc.Spec.Roles[i].Template.Spec)])
				require.NoError(t, err)
				value = strconv.Itoa(int(port))
			}
			for _, words := range spellings(row.Flag, value) {
				svc := story(t, fixture.file).Service
				pod := &svc.Spec.Roles[i].Template.Spec
				server := &pod.Containers[api.ServingContainerIndex(pod)]
				server.Args = append(slices.Clone(server.Args), words...)
				got, errs := render.Build(svc)
				require.Empty(t, errs, "%v", words)
				for j, line := range renderedServerLines(t, got, fixture.role) {
					if row.Use == vllm.Defaulted {
						assert.Equal(t, 1, occurrences(line, row.Flag), "%s given as %v is given again: %v", row.Name, words, line)
					}
					if value != "" { // a switch has no value
						last, _ := row.Value(line)
						assert.Equal(t, rendered[j], last, "%s given as %v", row.Name, words)
					}
				}
			}
		})
	}
}

// spellings are the ways a command line gives a flag, which vLLM's parser reads as one: its
// name, with underscores, its short alias, each with the value as a word or after "=" (a switch,
// value "", alone).
func spellings(f vllm.Flag, value string) [][]string {
	names := []string{f.Name, "--" + strings.ReplaceAll(strings.TrimPrefix(f.Name, "--"), "-", "_")}
	if f.Short != "" {
		names = append(names, f.Short)
	}
	var out [][]string
	for _, name := range slices.Compact(names) {
		if value == "" {
			out = append(out, []string{name})
			continue
		}
		out = append(out, []string{name, value}, []string{name + "=" + value})
	}
	return out
}

// isSwitch: the flag stands alone in the line (a boolean), followed by another flag or nothing.
func isSwitch(line []string, f vllm.Flag) bool {
	for i, w := range line {
		if f.In([]string{w}) && !strings.Contains(w, "=") {
			return i+1 == len(line) || strings.HasPrefix(line[i+1], "-")
		}
	}
	return false
}

// occurrences counts the words of a line that give the flag, read here as vLLM's parser reads
// them (underscores of a long flag's name are dashes), not by the vllm package under test.
func occurrences(line []string, f vllm.Flag) int {
	n := 0
	for _, w := range line {
		name, _, _ := strings.Cut(w, "=")
		if strings.HasPrefix(name, "--") {
			name = "--" + strings.ReplaceAll(name[2:], "_", "-")
		}
		if name == f.Name || f.Short != "" && name == f.Short {
			n++
		}
	}
	return n
}

// renderedServerLines are the vLLM command lines the render made for a role: each LeaderWorkerSet
// leader's and worker's server (each `vllm serve` of its shell script, for the Ray and data
// parallel launches), and the server patch of a dual-pods role.
func renderedServerLines(t *testing.T, tree *render.Tree, role string) [][]string {
	t.Helper()
	var lines [][]string
	for _, o := range tree.Objects {
		lws, ok := o.Object.(*lwsv1.LeaderWorkerSet)
		if !ok || o.Role != role {
			continue
		}
		templates := []*corev1.PodTemplateSpec{&lws.Spec.LeaderWorkerTemplate.WorkerTemplate}
		if leader := lws.Spec.LeaderWorkerTemplate.LeaderTemplate; leader != nil {
			templates = append(templates, leader)
		}
		for _, tpl := range templates {
			if patch, ok := tpl.Annotations[render.AnnotationDualPodsServerPatch]; ok {
				var server struct {
					Spec struct{ Containers []corev1.Container }
				}
				require.NoError(t, yaml.Unmarshal([]byte(patch), &server))
				for i := range server.Spec.Containers {
					lines = append(lines, vllm.CommandLine(&server.Spec.Containers[i]))
				}
				continue
			}
			for i := range tpl.Spec.Containers {
				lines = append(lines, serverLines(&tpl.Spec.Containers[i])...)
			}
		}
	}
	return lines
}

// serverLines are the vLLM command lines a container runs: its own, or each of its shell
// script's commands that runs vLLM.
func serverLines(c *corev1.Container) [][]string {
	if !vllm.RunsServer(c) {
		return nil
	}
	if !vllm.IsShellScript(c) {
		return [][]string{vllm.CommandLine(c)}
	}
	var out [][]string
	for _, command := range shellCommands(c.Args[len(c.Args)-1]) {
		if vllm.RunsServer(&corev1.Container{Image: "script", Command: command}) {
			out = append(out, command)
		}
	}
	return out
}

// shellCommands splits a shell script into its simple commands' words: enough of the shell's
// grammar for the launches' scripts (single and double quotes, backslashes; commands end at a
// newline, ";", "&" and "&&", "|" and "||").
func shellCommands(script string) [][]string {
	var commands [][]string
	var words []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			commands = append(commands, words)
		}
		words = nil
	}
	for i := 0; i < len(script); i++ {
		switch ch := script[i]; {
		case ch == '\'':
			end := strings.IndexByte(script[i+1:], '\'')
			word.WriteString(script[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case ch == '"':
			for i++; i < len(script) && script[i] != '"'; i++ {
				if script[i] == '\\' && i+1 < len(script) {
					i++
				}
				word.WriteByte(script[i])
			}
			inWord = true
		case ch == '\\' && i+1 < len(script):
			i++
			word.WriteByte(script[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			endWord()
		case ch == '\n' || ch == ';' || ch == '&' || ch == '|':
			endCommand()
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	endCommand()
	return commands
}

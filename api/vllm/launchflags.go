// SPDX-License-Identifier: Apache-2.0

package vllm

import (
	"slices"
	"strings"
)

// Flag is one of vLLM's server flags: its name as vLLM declares it and its short alias, "" if
// none (vllm/engine/arg_utils.py, EngineArgs.add_cli_args; vllm/entrypoints/openai/cli_args.py,
// make_arg_parser). vLLM also accepts the name with underscores for dashes (splitFlag).
type Flag struct{ Name, Short string }

// Names are the flag's name and its short alias.
func (f Flag) Names() []string {
	if f.Short == "" {
		return []string{f.Name}
	}
	return []string{f.Name, f.Short}
}

// In reports whether a command line gives the flag, under any of its names and spellings, with
// a value or without (a boolean flag), or one key of it ("--flag.key value", a JSON flag's).
func (f Flag) In(words []string) bool {
	for _, w := range words {
		name, _, _ := splitFlag(w)
		for _, n := range f.Names() {
			if name == n || strings.HasPrefix(name, n+".") {
				return true
			}
		}
	}
	return false
}

// Value is the flag's value in a command line (FlagValue).
func (f Flag) Value(words []string) (string, bool) { return FlagValue(words, f.Names()...) }

// Occurrences are the values of every occurrence of the flag, in order, under any name and
// spelling: a command line that gives it twice shows both (argparse keeps the last).
func (f Flag) Occurrences(words []string) []string {
	var values []string
	for i := 0; i < len(words); i++ {
		name, value, hasValue := splitFlag(words[i])
		switch {
		case !slices.Contains(f.Names(), name):
		case hasValue:
			values = append(values, value)
		case i+1 < len(words):
			values = append(values, words[i+1])
			i++
		}
	}
	return values
}

// Without is a command line with every occurrence of the flag, in any name and spelling, and
// its value ("--flag value" or "--flag=value") taken out.
func (f Flag) Without(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		name, _, hasValue := splitFlag(words[i])
		switch {
		case !slices.Contains(f.Names(), name):
			out = append(out, words[i])
		case !hasValue && i+1 < len(words):
			i++
		}
	}
	return out
}

// Values are the values of a flag that takes one or more (argparse's nargs="+", as
// --served-model-name): the words after its last occurrence up to the next flag, or the one
// after its "=".
func (f Flag) Values(words []string) []string {
	var values []string
	for i := 0; i < len(words); i++ {
		name, value, hasValue := splitFlag(words[i])
		if !slices.Contains(f.Names(), name) {
			continue
		}
		if hasValue {
			values = []string{value}
			continue
		}
		values = nil
		for i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
			i++
			values = append(values, words[i])
		}
	}
	return values
}

// The server flags the project's render sets (the LaunchFlags table says when and how).
var (
	FlagPort                       = Flag{Name: "--port"}
	FlagModel                      = Flag{Name: ModelFlag}
	FlagServedModelName            = Flag{Name: "--served-model-name"}
	FlagLoadFormat                 = Flag{Name: "--load-format"}
	FlagDistributedExecutorBackend = Flag{Name: "--distributed-executor-backend"}
	FlagTensorParallelSize         = Flag{Name: "--tensor-parallel-size", Short: "-tp"}
	FlagPipelineParallelSize       = Flag{Name: "--pipeline-parallel-size", Short: "-pp"}
	FlagDataParallelSize           = Flag{Name: "--data-parallel-size", Short: "-dp"}
	FlagDataParallelRPCPort        = Flag{Name: "--data-parallel-rpc-port", Short: "-dpp"}
	FlagDataParallelAddress        = Flag{Name: "--data-parallel-address", Short: "-dpa"}
	FlagDataParallelRank           = Flag{Name: "--data-parallel-rank", Short: "-dpn"}
	FlagEnableExpertParallel       = Flag{Name: "--enable-expert-parallel", Short: "-ep"}
	FlagEnableLoRA                 = Flag{Name: "--enable-lora"}
	FlagMaxLoras                   = Flag{Name: "--max-loras"}
	FlagMaxLoraRank                = Flag{Name: "--max-lora-rank"}
	FlagEnableSleepMode            = Flag{Name: "--enable-sleep-mode"}
	// The KV-cache events a server publishes (vllm/config/kv_events.py KVEventsConfig) and the
	// tokens of its KV blocks (vllm/config/cache.py CacheConfig.block_size).
	FlagKVEventsConfig = Flag{Name: "--kv-events-config"}
	FlagBlockSize      = Flag{Name: "--block-size"}
	// FlagNoPrefixCaching turns prefix caching off (CacheConfig.enable_prefix_caching, a switch
	// with its negation): a server without it hashes no block, and publishes no block stored.
	FlagNoPrefixCaching = Flag{Name: "--no-enable-prefix-caching"}
	// The KV connector (vllm/config/kv_transfer.py KVTransferConfig), and the flags that make
	// vLLM set it to its CPU offloading connector, replacing the connector given
	// (vllm/config/vllm.py VllmConfig._post_init_kv_transfer_config).
	FlagKVTransferConfig    = Flag{Name: "--kv-transfer-config"}
	FlagKVOffloadingSize    = Flag{Name: "--kv-offloading-size"}
	FlagKVOffloadingBackend = Flag{Name: "--kv-offloading-backend"}
)

// FlagConfig names a YAML file of flags, which vLLM reads as if given on the command line
// (vllm/utils/argparse_utils.py, FlexibleArgumentParser._pull_args_from_config): a rule that
// misses a flag cannot tell whether the file gives it.
var FlagConfig = Flag{Name: "--config"}

// FlagUse is what the render does with a flag it sets, and so what a user's own may be.
type FlagUse string

const (
	// Owned: the render gives it from a field of the spec; validation refuses it in the user's
	// command line, where it would say the field's value a second time, or contradict it.
	Owned FlagUse = "owned"
	// Defaulted: the render gives it only when the user's command line does not; the user's own
	// stands (validation refuses a value that contradicts a field that says otherwise).
	Defaulted FlagUse = "defaulted"
	// Rewritten: the render replaces the value of the user's own (the model's path; a server's
	// port that moves), or adds it when absent.
	Rewritten FlagUse = "rewritten"
)

// Features of the spec whose render sets server flags, named by the field that turns them on.
const (
	ByParallelism      = "parallelism"      // vLLM's own data parallel launch (docs/design/0026-wide-expert-parallelism.md)
	ByMultinodeRay     = "multinode"        // the Ray launch of a multi-node replica without parallelism
	ByModel            = "model"            // spec.model: the model's files and public name
	ByModelLoadFormat  = "model.loadFormat" // the Run:ai streamer
	ByModelAdapters    = "model.adapters"   // LoRA adapters, loaded at run time
	ByModelFlexibility = "modelFlexibility" // dual pods: FMA puts servers to sleep
	ByDecodeRouting    = "router"           // a routed decode leader's server moves behind the routing sidecar
	ByPreciseRouting   = "strategy"         // a router's strategy precise-prefix-cache: the servers publish KV-cache events
	ByKVCacheOffload   = "kvCacheOffload"   // a role's KV cache offloaded to CPU memory
)

// LaunchFlag is a row of LaunchFlags: a flag, what the render does with it, and the feature that
// has it set.
type LaunchFlag struct {
	Flag
	Use FlagUse
	By  string
}

// LaunchFlags are every server flag the render sets, and the flags it reserves to itself beside
// them: one table, read by the render (which spells the flags from it) and by validation (which
// refuses a user's Owned flag), and tied to both by core/render's launchflags_test.go. A flag may
// have a row for each feature that sets it.
var LaunchFlags = []LaunchFlag{
	// The data parallel launch gives every rank its place in the group (render's
	// DataParallelScript), from parallelism.
	{FlagDataParallelSize, Owned, ByParallelism},
	{FlagDataParallelRPCPort, Owned, ByParallelism},
	{FlagTensorParallelSize, Owned, ByParallelism},
	{FlagPipelineParallelSize, Owned, ByParallelism},
	{FlagEnableExpertParallel, Owned, ByParallelism},
	{FlagDataParallelAddress, Owned, ByParallelism},
	{FlagDataParallelRank, Owned, ByParallelism},
	// ... and decides vLLM's launch mode, which these flags would change (one external-LB server
	// a rank, no Ray, no API server processes of their own).
	{Flag{Name: "--data-parallel-size-local", Short: "-dpl"}, Owned, ByParallelism},
	{Flag{Name: "--data-parallel-start-rank", Short: "-dpr"}, Owned, ByParallelism},
	{Flag{Name: "--data-parallel-hybrid-lb", Short: "-dph"}, Owned, ByParallelism},
	{Flag{Name: "--data-parallel-external-lb", Short: "-dpe"}, Owned, ByParallelism},
	{Flag{Name: "--headless"}, Owned, ByParallelism},
	{Flag{Name: "--api-server-count", Short: "-asc"}, Owned, ByParallelism},
	{Flag{Name: "--data-parallel-backend", Short: "-dpb"}, Owned, ByParallelism},
	{FlagDistributedExecutorBackend, Owned, ByParallelism},
	// Local rank i serves on the server's port + i: the user's --port is rank 0's.
	{FlagPort, Rewritten, ByParallelism},
	{FlagDistributedExecutorBackend, Defaulted, ByMultinodeRay}, // ray; validation refuses another
	{FlagModel, Rewritten, ByModel},                             // the model's files; validation refuses another model
	{FlagServedModelName, Defaulted, ByModel},
	{FlagLoadFormat, Defaulted, ByModelLoadFormat}, // validation refuses another format
	{FlagEnableLoRA, Defaulted, ByModelAdapters},
	{FlagMaxLoras, Defaulted, ByModelAdapters},    // validation refuses another value than spec.model.maxLoras
	{FlagMaxLoraRank, Defaulted, ByModelAdapters}, // validation refuses another value than spec.model.maxLoraRank
	{FlagEnableSleepMode, Defaulted, ByModelFlexibility},
	{FlagPort, Rewritten, ByDecodeRouting}, // the routing sidecar takes the pool's port
	// Precise prefix-cache routing: each server (each rank) publishes its KV-cache events where
	// the picker dials, under the topic its index looks up; the picker hashes blocks of the
	// servers' size (validation refuses a size that disagrees with the picker's or another role's).
	{FlagKVEventsConfig, Owned, ByPreciseRouting},
	{FlagBlockSize, Defaulted, ByPreciseRouting},
	// KV cache offloading: the connector given, if any, beside vLLM's OffloadingConnector in a
	// MultiConnector (kvcacheoffload.go); vLLM's own offloading flags would replace the given one.
	{FlagKVTransferConfig, Rewritten, ByKVCacheOffload},
	{FlagKVOffloadingSize, Owned, ByKVCacheOffload},
	{FlagKVOffloadingBackend, Owned, ByKVCacheOffload},
}

// LaunchFlagsOf are the flags of LaunchFlags a feature sets with a use.
func LaunchFlagsOf(by string, use FlagUse) []Flag {
	var out []Flag
	for _, row := range LaunchFlags {
		if row.By == by && row.Use == use && !slices.Contains(out, row.Flag) {
			out = append(out, row.Flag)
		}
	}
	return out
}

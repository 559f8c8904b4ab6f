// SPDX-License-Identifier: Apache-2.0

package vllm

// vLLM's LoRA serving (docs/design/0027-lora-adapters.md): the flags that turn it on and size it
// (vllm/engine/arg_utils.py, EngineArgs.add_cli_args: --enable-lora, --max-loras,
// --max-lora-rank), the variable that opens the runtime API (vllm/envs.py,
// VLLM_ALLOW_RUNTIME_LORA_UPDATING), its endpoints (vllm/entrypoints/openai/api_server.py,
// load_lora_adapter and unload_lora_adapter), and the metric that says which adapters are active
// (vllm/v1/metrics/loggers.py, vllm:lora_requests_info), which the Endpoint Picker's LoRA affinity
// reads.
// The flags are FlagEnableLoRA, FlagMaxLoras and FlagMaxLoraRank, of LaunchFlags.
var (
	// FlagLoRAModules names adapters to load at start; the project loads them at run time instead.
	FlagLoRAModules = Flag{Name: "--lora-modules"}
)

const (
	EnvAllowRuntimeLoRAUpdating = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"

	PathModels            = "/v1/models"
	PathLoadLoRAAdapter   = "/v1/load_lora_adapter"
	PathUnloadLoRAAdapter = "/v1/unload_lora_adapter"

	MetricLoRARequestsInfo = "vllm:lora_requests_info"
)

// AdapterList is the adapters a server should have loaded, as the project's loader sidecar reads
// them (cmd/fusioninfer-lora-loader) from the service's adapters ConfigMap: JSON, in the spec's
// order.
type AdapterList struct {
	Adapters []Adapter `json:"adapters"`
}

// Adapter is one adapter of the list: the name requests ask for, and the directory of its files
// in the server's pod (vLLM's lora_name and lora_path).
type Adapter struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// The loader's flags (cmd/fusioninfer-lora-loader), as the render gives them and the tests read
// them: FlagLoaderServer is a server it loads adapters into, a base URL (it repeats: one a data
// parallel rank); FlagLoaderListen the address of its endpoints, ":LoRALoaderPort" unless given.
var (
	FlagLoaderServer = Flag{Name: "--server"}
	FlagLoaderListen = Flag{Name: "--listen"}
)

// The loader's own endpoints (cmd/fusioninfer-lora-loader), on LoRALoaderPort of its pod:
// PathLoaderReady answers 200 once every adapter of the list was tried (its readiness; an adapter
// that failed is named, not held against the pod), PathLoaderState its state,
// a LoaderState as JSON, which `fusioninfer status` reads through the API server's pod proxy.
const (
	LoRALoaderPort  = 8091
	PathLoaderReady = "/ready"
	PathLoaderState = "/adapters"
)

// AdapterConfigFile is the file vLLM reads first from an adapter's directory (vllm/lora/peft_helper.py,
// PEFTHelper.from_local_dir): without it, vLLM refuses to load the adapter
// (vllm/lora/worker_manager.py, WorkerLoRAManager._load_adapter).
const AdapterConfigFile = "adapter_config.json"

// LoaderState is what the loader last saw of its server: each adapter of the list, and what keeps
// the list from being loaded ("" when nothing does), including what is wrong before any adapter
// is tried (the list unreadable, the server not answering yet).
type LoaderState struct {
	Adapters []AdapterState `json:"adapters"`
	Problem  string         `json:"problem,omitempty"`
}

// AdapterState is one adapter of the list as the loader last saw it: loaded, or why it failed to.
type AdapterState struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Loaded bool   `json:"loaded"`
	// Error is why it failed to load: the server's answer, or the loader's own check of its files.
	Error string `json:"error,omitempty"`
}

package vllm

// vLLM's LoRA serving (docs/design/0027-lora-adapters.md): the flags that turn it on and size it
// (vllm/engine/arg_utils.py, EngineArgs.add_cli_args: --enable-lora, --max-loras,
// --max-lora-rank), the variable that opens the runtime API (vllm/envs.py,
// VLLM_ALLOW_RUNTIME_LORA_UPDATING), its endpoints (vllm/entrypoints/openai/api_server.py,
// load_lora_adapter and unload_lora_adapter), and the metric that says which adapters are active
// (vllm/v1/metrics/loggers.py, vllm:lora_requests_info), which the Endpoint Picker's LoRA affinity
// reads.
const (
	FlagEnableLoRA  = "--enable-lora"
	FlagMaxLoras    = "--max-loras"
	FlagMaxLoraRank = "--max-lora-rank"
	// FlagLoRAModules names adapters to load at start; the project loads them at run time instead.
	FlagLoRAModules = "--lora-modules"

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

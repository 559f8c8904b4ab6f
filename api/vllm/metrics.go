// SPDX-License-Identifier: Apache-2.0

package vllm

// The metrics of vLLM's /metrics endpoint the project names (vLLM v0.33.0, the examples' server,
// and llm-d-inference-sim v0.10.2, the e2e suite's): an autoscaled role's metrics, the KV-cache
// usage GIE v1.2.0's Endpoint Picker is told to read, and the gauges `fusioninfer status` shows
// per replica (requests running and waiting, KV-cache usage, 0 to 1). vLLM renamed the KV-cache metric from
// vllm:gpu_cache_usage_perc, which it no longer exports.
const (
	MetricRequestsRunning = "vllm:num_requests_running"
	MetricRequestsWaiting = "vllm:num_requests_waiting"
	MetricKVCacheUsage    = "vllm:kv_cache_usage_perc"
)

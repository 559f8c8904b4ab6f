// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/gateway"
)

// response is what a client saw of one completion.
type response struct {
	status int
	// pod is the server that answered: llm-d-inference-sim's x-inference-pod header, which the
	// gateway passes back.
	pod string
	// model is the model the response names (its "model"): the name the client asked for, even
	// when the Endpoint Picker rewrote it (the gateway's Record.Model has the target).
	model       string
	ttft, total time.Duration
	// cachedTokens are the prompt tokens the server found in its KV cache (usage.prompt_tokens_details).
	cachedTokens, promptTokens int
	err                        error
	// closed: the server asked the client to close the connection (Connection: close).
	closed bool
}

var client = &http.Client{Timeout: 2 * time.Minute}

// complete sends an OpenAI completion of prompt to url (the gateway) and reads it, streamed or not.
func complete(url, prompt string, maxTokens int, stream bool) response {
	return completeWith(client, url, prompt, maxTokens, stream)
}

// completeWith is complete over the client's connections.
func completeWith(c *http.Client, url, prompt string, maxTokens int, stream bool) response {
	return postWith(c, url+"/v1/completions", map[string]any{"model": model, "prompt": prompt, "max_tokens": maxTokens}, stream)
}

// chat sends an OpenAI chat completion of one user message.
func chat(url, message string, stream bool) response {
	return post(url+"/v1/chat/completions", map[string]any{"model": model, "max_tokens": 8,
		"messages": []any{map[string]any{"role": "user", "content": message}}}, stream)
}

// post sends an OpenAI request and reads its answer, streamed (server-sent events) or not.
func post(url string, body map[string]any, stream bool) response {
	return postWith(client, url, body, stream)
}

// postWith is post over the client's connections.
func postWith(c *http.Client, url string, body map[string]any, stream bool) response {
	if stream {
		body["stream"], body["stream_options"] = true, map[string]any{"include_usage": true}
	}
	data, _ := json.Marshal(body)
	start := time.Now()
	resp, err := c.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()
	out := response{status: resp.StatusCode, pod: resp.Header.Get("x-inference-pod"), closed: resp.Close}
	type usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	var chunk struct {
		Model   string            `json:"model"`
		Choices []json.RawMessage `json:"choices"`
		Usage   *usage            `json:"usage"`
	}
	record := func(u *usage) {
		if u != nil {
			out.promptTokens, out.cachedTokens = u.PromptTokens, u.PromptTokensDetails.CachedTokens
		}
	}
	if resp.StatusCode != http.StatusOK || !stream {
		data, err := io.ReadAll(resp.Body)
		out.total, out.ttft, out.err = time.Since(start), time.Since(start), err
		if resp.StatusCode != http.StatusOK {
			out.err = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
		} else if err == nil {
			out.err = json.Unmarshal(data, &chunk)
			out.model = chunk.Model
			record(chunk.Usage)
		}
		return out
	}
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		line, ok := strings.CutPrefix(scanner.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		chunk.Usage = nil
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			out.err = err
			break
		}
		if chunk.Model != "" {
			out.model = chunk.Model
		}
		if len(chunk.Choices) > 0 && out.ttft == 0 {
			out.ttft = time.Since(start)
		}
		record(chunk.Usage)
	}
	if err := scanner.Err(); err != nil && out.err == nil {
		out.err = err
	}
	out.total = time.Since(start)
	return out
}

// serverMetrics are a model server's own Prometheus metrics (vLLM's names), read from its
// process directly, not through the pod's address.
func serverMetrics(p *testcluster.ContainerProcess) (map[string]*dto.MetricFamily, error) {
	return serverMetricsAt(p.URL(8000))
}

// serverMetricsAt are the metrics of the model server at url (a process's own loopback port).
func serverMetricsAt(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(prommodel.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// metricSum is the sum of a counter's or gauge's series.
func metricSum(families map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, m := range families[name].GetMetric() {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum
}

// requestsServed is how many requests a model server has completed (vllm:request_success_total).
func requestsServed(p *testcluster.ContainerProcess) (float64, error) {
	families, err := serverMetrics(p)
	if err != nil {
		return 0, err
	}
	return metricSum(families, "vllm:request_success_total"), nil
}

// tail is the end of a log file.
func tail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}

// measured returns a Progress that also keeps what it prints and, if t fails, prints it again at
// t's end: beside the failure, where an excerpt of a long CI log keeps it, the figures say which
// measurement missed and by how much.
func measured(t testing.TB) func(format string, args ...any) {
	var mu sync.Mutex
	var lines []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what it measured:\n  %s", strings.Join(lines, "\n  "))
		}
	})
	return func(format string, args ...any) {
		testcluster.Progress(format, args...)
		mu.Lock()
		lines = append(lines, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
}

// routedWindow is when the first and the last of the records that match were routed.
func routedWindow(records []gateway.Record, match func(gateway.Record) bool) (first, last time.Time) {
	for _, rec := range records {
		if !match(rec) {
			continue
		}
		if first.IsZero() || rec.RoutedAt.Before(first) {
			first = rec.RoutedAt
		}
		if rec.RoutedAt.After(last) {
			last = rec.RoutedAt
		}
	}
	return first, last
}

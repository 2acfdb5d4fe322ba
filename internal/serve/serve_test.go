package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
)

// smallScenario is the default scenario's model and card without its
// workload: what the tests serve.
const smallScenario = `model: meta-llama/Llama-3.1-8B
hardware: RTXPRO6000
seed: 42
engine:
  max_num_seqs: 128
  max_num_batched_tokens: 2048
`

func build(t testing.TB, y string) *assemble.Built {
	t.Helper()
	s, err := config.Parse([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := assemble.Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// start serves b at 127.0.0.1 (instance: -1 the cluster, else one
// instance) and stops everything when the test ends.
func start(t testing.TB, b *assemble.Built, opts Options) (*Server, string) {
	t.Helper()
	return startWith(t, b, opts, nil)
}

// startWith is start with the handler wrapped by wrap (nil: none).
func startWith(t testing.TB, b *assemble.Built, opts Options, wrap func(http.Handler) http.Handler) (*Server, string) {
	t.Helper()
	opts.Version = "test"
	srv, err := NewServer(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	h := srv.Handler(-1)
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		if err := srv.Driver.Stop(); err != nil {
			t.Error(err)
		}
	})
	return srv, hs.URL
}

func post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// sse is what a streaming client saw.
type sse struct {
	id       string
	texts    []string // one per content chunk
	times    []time.Time
	finish   string
	usage    *usage
	done     bool
	sent     time.Time
	roleSeen bool
}

// stream posts a streaming request and reads it to the end.
func stream(ctx context.Context, client *http.Client, url, body string) (*sse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := &sse{sent: time.Now()}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return nil, fmt.Errorf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return nil, fmt.Errorf("line %q is not an SSE data line", line)
		}
		if data == "[DONE]" {
			out.done = true
			continue
		}
		var ch struct {
			ID      string `json:"id"`
			Choices []struct {
				Text  *string `json:"text"`
				Delta *struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, fmt.Errorf("chunk %q: %w", data, err)
		}
		out.id = ch.ID
		if ch.Usage != nil {
			out.usage = ch.Usage
		}
		for _, c := range ch.Choices {
			text := ""
			switch {
			case c.Text != nil:
				text = *c.Text
			case c.Delta != nil && c.Delta.Role != "":
				out.roleSeen = true
				continue
			case c.Delta != nil:
				text = c.Delta.Content
			}
			out.texts = append(out.texts, text)
			out.times = append(out.times, time.Now())
			if c.FinishReason != nil {
				out.finish = *c.FinishReason
			}
		}
	}
	return out, sc.Err()
}

// scrape parses /metrics with Prometheus's text parser.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value is the value of family name's series whose labels include want.
func value(t testing.TB, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	for _, m := range f.Metric {
		ok := true
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.Counter.GetValue()
		case dto.MetricType_GAUGE:
			return m.Gauge.GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("%s has no series with labels %v", name, want)
	return 0
}

// TestAPI: completions and chat completions, streaming and not, with the
// usage counts of the tokenizer-free count (ceil(bytes/4) for a text
// prompt, the ids for a token-id prompt, 4 template tokens per chat
// message and 4 for the assistant's turn), then /metrics agrees with what
// was served.
func TestAPI(t *testing.T) {
	_, base := start(t, build(t, smallScenario), Options{Config: Config{Speed: 4}})
	// "Hello, simulated world!" is 23 bytes: 6 tokens.
	code, body := post(t, base+"/v1/completions", `{"model": "meta-llama/Llama-3.1-8B", "prompt": "Hello, simulated world!", "max_tokens": 7}`)
	var c response
	var choices []completionChoice
	c.Choices = &choices
	if err := json.Unmarshal(body, &c); code != 200 || err != nil {
		t.Fatalf("completion: %d %s (%v)", code, body, err)
	}
	if c.Object != "text_completion" || c.Usage == nil || *c.Usage != (usage{PromptTokens: 6, CompletionTokens: 7, TotalTokens: 13}) ||
		len(choices) != 1 || len(strings.Fields(choices[0].Text)) != 7 || choices[0].FinishReason == nil || *choices[0].FinishReason != "length" {
		t.Fatalf("completion: %s", body)
	}
	// Token ids: 5 of them.
	code, body = post(t, base+"/v1/completions", `{"prompt": [1, 2, 3, 4, 5], "max_tokens": 2, "ignore_eos": true}`)
	if code != 200 || !strings.Contains(string(body), `"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}`) {
		t.Fatalf("token-id prompt: %d %s", code, body)
	}
	// Chat: two messages of 8 and 3 bytes: (4+2) + (4+1) + 4 = 15 tokens.
	code, body = post(t, base+"/v1/chat/completions", `{"messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi!"}], "max_completion_tokens": 4}`)
	if code != 200 || !strings.Contains(string(body), `"object":"chat.completion"`) || !strings.Contains(string(body), `"role":"assistant"`) ||
		!strings.Contains(string(body), `"usage":{"prompt_tokens":15,"total_tokens":19,"completion_tokens":4}`) {
		t.Fatalf("chat: %d %s", code, body)
	}
	ctx := context.Background()
	s, err := stream(ctx, http.DefaultClient, base+"/v1/completions", `{"prompt": "abcdefgh", "max_tokens": 9, "stream": true, "stream_options": {"include_usage": true}}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.texts) != 9 || s.finish != "length" || !s.done || s.usage == nil || *s.usage != (usage{PromptTokens: 2, CompletionTokens: 9, TotalTokens: 11}) {
		t.Fatalf("streamed completion: %d chunks, finish %q, done %v, usage %+v", len(s.texts), s.finish, s.done, s.usage)
	}
	s, err = stream(ctx, http.DefaultClient, base+"/v1/chat/completions", `{"messages": [{"role": "user", "content": [{"type": "text", "text": "abcd"}]}], "max_tokens": 3, "stream": true}`)
	if err != nil {
		t.Fatal(err)
	}
	if !s.roleSeen || len(s.texts) != 3 || s.finish != "length" || !s.done || s.usage != nil || !strings.HasPrefix(s.id, "chatcmpl-") {
		t.Fatalf("streamed chat: role %v, %d chunks, finish %q, done %v, usage %+v, id %q", s.roleSeen, len(s.texts), s.finish, s.done, s.usage, s.id)
	}
	for _, p := range []struct{ path, want string }{
		{"/v1/models", `"id":"meta-llama/Llama-3.1-8B"`},
		{"/version", `"version":"test"`},
		{"/health", ``},
	} {
		resp, err := http.Get(base + p.path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), p.want) {
			t.Fatalf("%s: %d %s", p.path, resp.StatusCode, b)
		}
	}
	fams := scrape(t, base)
	model := []string{"model_name", "meta-llama/Llama-3.1-8B", "engine", "0"}
	for name, typ := range map[string]dto.MetricType{
		"vllm:num_requests_running": dto.MetricType_GAUGE, "vllm:num_requests_waiting": dto.MetricType_GAUGE,
		"vllm:kv_cache_usage_perc": dto.MetricType_GAUGE, "vllm:prefix_cache_queries_total": dto.MetricType_COUNTER,
		"vllm:prefix_cache_hits_total": dto.MetricType_COUNTER, "vllm:num_preemptions_total": dto.MetricType_COUNTER,
		"vllm:time_to_first_token_seconds": dto.MetricType_HISTOGRAM, "vllm:inter_token_latency_seconds": dto.MetricType_HISTOGRAM,
		"vllm:e2e_request_latency_seconds": dto.MetricType_HISTOGRAM, "vllm:request_success_total": dto.MetricType_COUNTER,
	} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("/metrics: %s missing or not a %s", name, typ)
		}
	}
	// Five requests, 7+2+4+9+3 = 25 tokens; prompts 6+5+15+2+ (4+1+4 = 9).
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vllm:request_success_total", append(model, "finished_reason", "length"), 5},
		{"vllm:generation_tokens_total", model, 25},
		{"vllm:prompt_tokens_total", model, 37},
		{"vllm:prefix_cache_queries_total", model, 37},
		{"vllm:time_to_first_token_seconds", model, 5},
		{"vllm:e2e_request_latency_seconds", model, 5},
		{"vllm:inter_token_latency_seconds", model, 25 - 5},
		{"vllm:num_requests_running", model, 0},
		{"vllm:cache_config_info", []string{"engine", "0", "block_size", "16", "num_gpu_blocks", "35776", "enable_prefix_caching", "true"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s = %g, want %g", c.name, got, c.want)
		}
	}
	// TTFT is observed when the first token is emitted; a one-token
	// request, which is never seen running, when it ends.
	if code, body := post(t, base+"/v1/completions", `{"prompt": "one", "max_tokens": 1}`); code != 200 {
		t.Fatalf("one-token request: %d %s", code, body)
	}
	if got := value(t, scrape(t, base), "vllm:time_to_first_token_seconds", model...); got != 6 {
		t.Errorf("TTFT observations after a one-token request: %g, want 6", got)
	}
}

// TestBadRequests: each malformed request gets vLLM's error shape with its
// status, and the server goes on serving.
func TestBadRequests(t *testing.T) {
	_, base := start(t, build(t, smallScenario), Options{Config: Config{Speed: 10}, MaxBody: 4096})
	for _, c := range []struct {
		name, path, body string
		status           int
		typ, msg         string
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": "x", `, 400, "BadRequestError", "not valid JSON"},
		{"two JSON values", "/v1/completions", `{"prompt": "x"} {}`, 400, "BadRequestError", "more than one JSON value"},
		{"unknown model", "/v1/completions", `{"model": "gpt-5", "prompt": "x"}`, 404, "NotFoundError", "The model `gpt-5` does not exist."},
		{"negative max_tokens", "/v1/completions", `{"prompt": "x", "max_tokens": -3}`, 400, "BadRequestError", "max_tokens must be at least 1, got -3."},
		{"zero max_completion_tokens", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 0}`, 400, "BadRequestError", "max_completion_tokens must be at least 1"},
		{"oversize body", "/v1/completions", `{"prompt": "` + strings.Repeat("x", 5000) + `"}`, 413, "RequestEntityTooLarge", "exceeds the limit of 4096 bytes"},
		{"n > 1", "/v1/completions", `{"prompt": "x", "n": 2}`, 400, "BadRequestError", "n must be 1"},
		{"over max_model_len", "/v1/completions", `{"prompt": "abcdefgh", "max_tokens": 131071}`, 400, "BadRequestError", "maximum context length is 131072 tokens. However, you requested 131073 tokens (2 in the messages, 131071 in the completion)"},
		{"no prompt", "/v1/completions", `{"max_tokens": 3}`, 400, "BadRequestError", "prompt is missing"},
		{"batch of prompts", "/v1/completions", `{"prompt": ["a", "b"]}`, 400, "BadRequestError", "batch of 2 prompts"},
		{"no messages", "/v1/chat/completions", `{"messages": []}`, 400, "BadRequestError", "messages is missing"},
		{"image part", "/v1/chat/completions", `{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`, 400, "BadRequestError", "not supported"},
		{"wrong type", "/v1/completions", `{"prompt": "x", "max_tokens": "many"}`, 400, "BadRequestError", "not valid JSON"},
	} {
		code, body := post(t, base+c.path, c.body)
		var e errorBody
		if err := json.Unmarshal(body, &e); err != nil || code != c.status || e.Error.Code != c.status || e.Error.Type != c.typ || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("%s: %d %s; want %d %s %q", c.name, code, body, c.status, c.typ, c.msg)
		}
	}
	resp, err := http.Get(base + "/v2/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	if code, body := post(t, base+"/v1/completions", `{"prompt": "still here", "max_tokens": 2}`); code != 200 {
		t.Fatalf("after the bad requests: %d %s", code, body)
	}
}

// TestDisconnectReleasesKV: a client that goes away mid-stream aborts its
// request: its KV blocks are released in the simulation (usage back to
// 0), the abort is counted once, and nothing is written after it.
func TestDisconnectReleasesKV(t *testing.T) {
	srv, base := start(t, build(t, smallScenario), Options{Config: Config{Speed: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prompt := strings.Repeat("token ", 2000) // 3,000 tokens
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions",
		strings.NewReader(`{"prompt": "`+prompt+`", "max_tokens": 5000, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 5 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	model := []string{"model_name", "meta-llama/Llama-3.1-8B", "engine", "0"}
	used := value(t, scrape(t, base), "vllm:kv_cache_usage_perc", model...)
	if used <= 0 {
		t.Fatalf("KV usage while streaming = %g, want > 0", used)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fams := scrape(t, base)
		used = value(t, fams, "vllm:kv_cache_usage_perc", model...)
		aborts := value(t, fams, "vllm:request_success_total", append(model, "finished_reason", "abort")...)
		if used == 0 && aborts == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the disconnect: KV usage %g, aborts %g", used, aborts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lag := srv.Driver.Lag(); lag.Samples == 0 {
		t.Fatal("no event was processed")
	}
}

// TestRecordingIsJSONL: the recording of a short session is a trace the
// trace reader takes, one line per request in arrival order.
func TestRecordingIsJSONL(t *testing.T) {
	var buf bytes.Buffer
	rec := NewRecorder(&buf, nil)
	srv, base := start(t, build(t, smallScenario), Options{Config: Config{Speed: 10, Recorder: rec}})
	for i := range 3 {
		if code, body := post(t, base+"/v1/completions", fmt.Sprintf(`{"prompt": "request %d", "max_tokens": %d}`, i, 2+i)); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	if err := srv.Driver.Stop(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"input_toks":3,"output_toks":4,`) {
		t.Fatalf("recording:\n%s", buf.String())
	}
}

// TestStreamEndsWithErrorWhenStopped: a stream cut by the server's stop
// ends with vLLM's error event and [DONE]; requests after it get a 503.
func TestStreamEndsWithErrorWhenStopped(t *testing.T) {
	srv, base := start(t, build(t, smallScenario), Options{Config: Config{Speed: 1}})
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "stop me", "max_tokens": 5000, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 2 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	if err := srv.Driver.Stop(); err != nil {
		t.Fatal(err)
	}
	var last []string
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			last = append(last, l)
		}
	}
	if n := len(last); n < 2 || last[n-1] != "data: [DONE]" || !strings.HasPrefix(last[n-2], `data: {"error":`) || !strings.Contains(last[n-2], `"code":503`) {
		t.Fatalf("end of the stream: %q", last[max(0, len(last)-2):])
	}
	if code, body := post(t, base+"/v1/completions", `{"prompt": "x", "max_tokens": 1}`); code != 503 || !strings.Contains(string(body), "ServiceUnavailableError") {
		t.Fatalf("after the stop: %d %s", code, body)
	}
}

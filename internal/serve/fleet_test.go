package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOnePortPerInstance: with one handler per instance, a request sent
// to instance 1's port is served by instance 1, and each port's /metrics
// shows its own instance only.
func TestOnePortPerInstance(t *testing.T) {
	b := build(t, smallScenario+"instances:\n  - name: a\n    count: 2\n")
	srv, err := NewServer(b, Options{Config: Config{Speed: 10}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	var urls []string
	for i := range 2 {
		hs := httptest.NewServer(srv.Handler(i))
		defer hs.Close()
		urls = append(urls, hs.URL)
	}
	defer func() {
		if err := srv.Driver.Stop(); err != nil {
			t.Error(err)
		}
	}()
	for range 3 {
		if code, body := post(t, urls[1]+"/v1/completions", `{"prompt": "to instance one", "max_tokens": 3}`); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	m0, m1 := scrape(t, urls[0]), scrape(t, urls[1])
	model := "meta-llama/Llama-3.1-8B"
	if got := value(t, m1, "vllm:request_success_total", "engine", "1", "finished_reason", "length", "model_name", model); got != 3 {
		t.Errorf("instance 1 served %g requests, want 3", got)
	}
	if got := value(t, m0, "vllm:request_success_total", "engine", "0", "finished_reason", "length", "model_name", model); got != 0 {
		t.Errorf("instance 0 served %g requests, want 0", got)
	}
	for _, m := range m0["vllm:request_success_total"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "engine" && l.GetValue() != "0" {
				t.Fatalf("instance 0's /metrics shows engine %s", l.GetValue())
			}
		}
	}
}

// TestPDServesThroughTheHandoff: a P/D scenario (one prefill, one decode
// instance) serves a streamed request through the handoff: its tokens
// come from the decode instance; a client that goes away mid-stream
// leaves no KV on either instance.
func TestPDServesThroughTheHandoff(t *testing.T) {
	b := build(t, smallScenario+`instances:
  - name: prefill
    count: 1
    role: prefill
  - name: decode
    count: 1
    role: decode
handoff:
  policy: pull
`)
	_, base := start(t, b, Options{Config: Config{Speed: 1}})
	s, err := stream(context.Background(), http.DefaultClient, base+"/v1/completions", `{"prompt": "disaggregated", "max_tokens": 6, "stream": true}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.texts) != 6 || !s.done {
		t.Fatalf("%d tokens, done %v", len(s.texts), s.done)
	}
	model := "meta-llama/Llama-3.1-8B"
	fams := scrape(t, base)
	if got := value(t, fams, "vllm:request_success_total", "engine", "1", "finished_reason", "length", "model_name", model); got != 1 {
		t.Fatalf("decode instance finished %g requests, want 1", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions",
		strings.NewReader(`{"prompt": "`+strings.Repeat("long ", 800)+`", "max_tokens": 4000, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fams = scrape(t, base)
		p := value(t, fams, "vllm:kv_cache_usage_perc", "engine", "0", "model_name", model)
		d := value(t, fams, "vllm:kv_cache_usage_perc", "engine", "1", "model_name", model)
		aborts := value(t, fams, "vllm:request_success_total", "engine", "1", "finished_reason", "abort", "model_name", model)
		if p == 0 && d == 0 && aborts == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the disconnect: KV usage prefill %g decode %g, aborts %g", p, d, aborts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRejectIsServiceUnavailable: a P/D scenario whose reject policy
// refuses a request at arrival answers 503 in vLLM's shape, streamed or
// not (the stream's headers wait for the first token), and keeps serving.
func TestRejectIsServiceUnavailable(t *testing.T) {
	b := build(t, smallScenario+`instances:
  - name: prefill
    count: 1
    role: prefill
  - name: decode
    count: 1
    role: decode
handoff:
  policy: reject
  max_decode_kv_fraction: 0.001
`)
	_, base := start(t, b, Options{Config: Config{Speed: 1}})
	// 0.1 % of the decode pool is a few dozen blocks: a 2,000-token prompt
	// is refused, a short one served.
	long := `"` + strings.Repeat("abcd", 2000) + `"`
	for _, stream := range []string{"false", "true"} {
		code, body := post(t, base+"/v1/completions", `{"prompt": `+long+`, "max_tokens": 4, "stream": `+stream+`}`)
		if code != 503 || !strings.Contains(string(body), `"type":"ServiceUnavailableError"`) || !strings.Contains(string(body), `"code":503`) {
			t.Fatalf("stream %s: %d %s", stream, code, body)
		}
	}
	if code, body := post(t, base+"/v1/completions", `{"prompt": "short", "max_tokens": 2}`); code != 200 {
		t.Fatalf("a short request after the refusals: %d %s", code, body)
	}
}

package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeCommand: servesim serve on a free loopback port answers a
// completion, stops by itself after --duration, and its --record file
// replayed by servesim run gives the records it wrote with
// --requests-jsonl, byte for byte.
func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	scen := write(t, dir, "s.yaml", "model: meta-llama/Llama-3.1-8B\nhardware: RTXPRO6000\nengine:\n  max_num_seqs: 128\n  max_num_batched_tokens: 2048\n")
	rec := filepath.Join(dir, "arrivals.jsonl")
	served := filepath.Join(dir, "served.jsonl")
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- execute([]string{"serve", "-c", scen, "--addr", "127.0.0.1:0", "--speed", "2", "--duration", "3s", "--record", rec, "--requests-jsonl", served}, &stdout, &stderr)
	}()
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+) `)
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 2 {
		resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "hello there", "max_tokens": 4}`))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"completion_tokens":4`) {
			t.Fatalf("%d %s (%v)", resp.StatusCode, body, err)
		}
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("servesim serve did not stop after --duration")
	}
	if !strings.Contains(stderr.String(), "driver lag over") {
		t.Errorf("no lag report: %s", stderr.String())
	}
	data, err := os.ReadFile(rec)
	if err != nil || strings.Count(string(data), "\n") != 2 {
		t.Fatalf("recording: %q (%v)", data, err)
	}
	replayed := filepath.Join(dir, "replayed.jsonl")
	code, out, errs := run(t, "run", "-c", scen, "--workload", rec, "-q", "--requests-jsonl", replayed)
	if code != 0 || !regexp.MustCompile(`finished:\s+2\b`).MatchString(out) {
		t.Fatalf("replay: exit %d\n%s\n%s", code, out, errs)
	}
	a, errA := os.ReadFile(served)
	b, errB := os.ReadFile(replayed)
	if errA != nil || errB != nil || len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("served records differ from the replay's:\n%s\n%s (%v, %v)", a, b, errA, errB)
	}
}

// TestServeBadFlags: flag mistakes are one-line errors with exit code 2.
func TestServeBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--speed", "0"}, "--speed must be > 0"},
		{[]string{"serve", "--addr", "nonsense"}, "give HOST:PORT"},
		{[]string{"serve", "--per-instance", "--record", "x.jsonl"}, "--per-instance"},
		{[]string{"serve", "--default-max-tokens", "-1"}, "--default-max-tokens must be >= 0"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, exitBadInput, stderr)
			continue
		}
		oneLineError(t, stderr, c.want)
	}
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRecordsIntoClosedPipe: per-request records written into a pipe whose
// reader leaves after one line ("--requests-jsonl /dev/stdout | head -1")
// stop the run promptly with exit code 141 and no message. Opening the
// output read-write made the process a reader of its own pipe, so once the
// pipe buffer filled every write blocked forever.
func TestRecordsIntoClosedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "records")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	first := make(chan []byte, 1)
	go func() {
		// head -1: read one line, then close the pipe.
		r, err := os.Open(fifo)
		if err != nil {
			first <- nil
			return
		}
		line, _ := bufio.NewReader(r).ReadBytes('\n')
		r.Close()
		first <- line
	}()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := execute([]string{"run", "-c", "../../examples/chat-multiturn.yaml", "--requests-jsonl", fifo}, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	select {
	case res := <-done:
		if res.code != exitBrokenPipe || res.stderr != "" || res.stdout != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and nothing printed", res.code, res.stdout, res.stderr, exitBrokenPipe)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run still writes into a pipe whose reader left a minute ago")
	}
	line := <-first
	var rec map[string]any
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Errorf("the first line read is not a JSON record: %q: %v", line, err)
	}
}

package serve

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
)

// TestLoad1000Clients (set SERVESIM_SERVE_LOAD=1; it takes about
// SERVESIM_SERVE_LOAD_S seconds, default 30): 1,000 concurrent streaming
// clients on the default scenario at --speed 1, each sending requests
// back to back (prompts of 50 to 500 random words, 32 to 256 output
// tokens). It reports the driver's lag behind the wall clock (the delay between an
// event's due time and its processing) and how busy the driver was, and
// fails if the driver fell behind real time: busy more than half the
// time, or a median lag above 1 ms.
func TestLoad1000Clients(t *testing.T) {
	if os.Getenv("SERVESIM_SERVE_LOAD") == "" {
		t.Skip("set SERVESIM_SERVE_LOAD=1 to run the 1,000-client load check")
	}
	secs := 30
	if v := os.Getenv("SERVESIM_SERVE_LOAD_S"); v != "" {
		if _, err := fmt.Sscan(v, &secs); err != nil || secs <= 0 {
			t.Fatalf("SERVESIM_SERVE_LOAD_S=%q: want a positive number of seconds", v)
		}
	}
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	b, err := assemble.Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	srv, base := start(t, b, Options{Config: Config{Speed: 1}})
	const clients = 1000
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	cpu0 := cpuTime(t)
	var done, tokens, failed atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(1, uint64(c)))
			for ctx.Err() == nil {
				var prompt strings.Builder
				for range 50 + rng.IntN(450) {
					fmt.Fprintf(&prompt, "w%03d ", rng.IntN(1000)) // distinct prompts: few prefix-cache hits
				}
				body := fmt.Sprintf(`{"prompt": %q, "max_tokens": %d, "stream": true}`, prompt.String(), 32+rng.IntN(224))
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
				if err != nil {
					failed.Add(1)
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					return
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == 200 {
					done.Add(1)
					tokens.Add(n)
				} else if ctx.Err() == nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	cpu := cpuTime(t) - cpu0
	lag := srv.Driver.Lag()
	fams := scrape(t, base)
	model := []string{"model_name", s.Model, "engine", "0"}
	gen := value(t, fams, "vllm:generation_tokens_total", model...)
	busy := lag.Busy.Seconds() / lag.Elapsed.Seconds()
	t.Logf("%d clients for %d s: %d requests completed, %d failed, %.0f tokens generated (%.0f tokens/s); CPU (server and clients) %.1f s = %.2f cores; driver busy %.1f %% of the time; driver lag over %d due events: p50 %d µs, p99 %d µs, p99.9 %d µs, max %d µs (load average %s)",
		clients, secs, done.Load(), failed.Load(), gen, gen/float64(secs), cpu.Seconds(), cpu.Seconds()/float64(secs), 100*busy, lag.Samples, lag.P50, lag.P99, lag.P999, lag.Max, loadAverage())
	if failed.Load() > 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
	// Falling behind real time is a driver whose work takes more than the
	// time it simulates (busy near 100 %), or late on most events; the
	// tail of the lag is the machine's stalls and is reported.
	if busy > 0.5 || lag.P50 > 1000 {
		t.Errorf("the driver fell behind real time: busy %.1f %% of the time, median lag %d µs", 100*busy, lag.P50)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

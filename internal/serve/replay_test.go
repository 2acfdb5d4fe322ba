package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
)

// clientResult is one request as its client measured it.
type clientResult struct {
	id          int64
	ttft, tpot  time.Duration // tpot: -1 with one token
	sent, first time.Time     // request sent, first token received
}

// load runs clients concurrent streaming clients against base, each
// sending perClient requests one after another (seeded prompts of words
// words or more, up to 400 more, and 8 to 40 output tokens), and returns
// what they measured.
func load(t testing.TB, base string, clients, perClient, words int, seed uint64) []clientResult {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	var mu sync.Mutex
	var out []clientResult
	var wg, ready sync.WaitGroup
	ready.Add(clients)
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			// Open the connection first (a request refused before the
			// simulation): connection set-up is the network's time.
			resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"max_tokens": 0}`))
			if err != nil {
				errs <- err
				return
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			ready.Done()
			ready.Wait()
			for range perClient {
				var b strings.Builder
				for range words + rng.IntN(400) {
					fmt.Fprintf(&b, "w%03d ", rng.IntN(1000)) // 5 bytes: distinct prompts, few prefix-cache hits
				}
				prompt := b.String()
				body := fmt.Sprintf(`{"prompt": %q, "max_tokens": %d, "stream": true}`, prompt, 8+rng.IntN(33))
				s, err := stream(context.Background(), client, base+"/v1/completions", body)
				if err != nil {
					errs <- err
					return
				}
				id, err := strconv.ParseInt(strings.TrimPrefix(s.id, "cmpl-"), 10, 64)
				if err != nil || len(s.times) == 0 {
					errs <- fmt.Errorf("stream %q with %d tokens", s.id, len(s.times))
					return
				}
				r := clientResult{id: id, ttft: s.times[0].Sub(s.sent), tpot: -1, sent: s.sent, first: s.times[0]}
				if n := len(s.times); n > 1 {
					r.tpot = s.times[n-1].Sub(s.times[0]) / time.Duration(n-1)
				}
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// TestClientLatencyMatchesReplay: clients measure TTFT and TPOT at 1, 16
// and 256 concurrent streaming clients; the recorded arrivals replayed by
// `servesim run` (runner.Run on the recording as the scenario's trace)
// predict them: the median client TTFT less each request's network time
// (from the client's send to the server's handler, and from the
// handler's write of the first token to the client's receipt, measured
// per request) and the median client TPOT are within 5 % (plus the
// driver's median lag behind the wall clock) of the replay's. The served
// run is at --speed 1. The clients share the machine with the server
// (and, in a full test run, with other test binaries and whatever else
// runs there): a measurement that fails is repeated, up to five times,
// and the test fails when all five do.
func TestClientLatencyMatchesReplay(t *testing.T) {
	// One client sends longer prompts (1,000 to 1,400 words, 1,250 to
	// 1,750 tokens), so that TTFT is tens of milliseconds, as under real
	// prompts, rather than one short step.
	for _, c := range []struct{ clients, perClient, words int }{{1, 16, 1000}, {16, 4, 10}, {256, 2, 10}} {
		t.Run(fmt.Sprintf("clients=%d", c.clients), func(t *testing.T) {
			var fails []string
			for attempt := 1; attempt <= attempts; attempt++ {
				if fails = measureReplay(t, c.clients, c.perClient, c.words, uint64(attempt)); len(fails) == 0 {
					return
				}
				t.Logf("attempt %d (load average %s): %s", attempt, loadAverage(), strings.Join(fails, "; "))
			}
			t.Errorf("%d attempts failed, the last: %s", attempts, strings.Join(fails, "; "))
		})
	}
}

// measureReplay serves clients concurrent clients at --speed 1, replays
// their recorded arrivals and returns how the medians disagree (nil: they
// agree).
func measureReplay(t *testing.T, clients, perClient, words int, seed uint64) []string {
	const speed = 1.0
	path := filepath.Join(t.TempDir(), "arrivals.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	hosts := &hostTimes{entered: map[int64]time.Time{}, written: map[int64]time.Time{}}
	srv, base := startWith(t, build(t, smallScenario), Options{Config: Config{Speed: speed, Recorder: NewRecorder(f, f)}}, hosts.wrap)
	got := load(t, base, clients, perClient, words, seed)
	if err := srv.Driver.Stop(); err != nil {
		t.Fatal(err)
	}
	lag := srv.Driver.Lag()
	recs := map[int64]metrics.Record{}
	res, err := runner.Run(build(t, smallScenario+"workload:\n  trace: "+path+"\n"), runner.Options{OnRecord: func(r *metrics.Record) { recs[r.ID] = *r }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished != int64(len(got)) || len(recs) != len(got) {
		t.Fatalf("replay finished %d of %d requests served", res.Finished, len(got))
	}
	var cT, pT, cP, pP []float64 // client, replay
	var nets, pre, toSim, toWrite []float64
	for _, r := range got {
		rec := recs[r.id]
		// The network's time: from the client's send to the server's
		// handler, and from the handler's write of the first token to
		// the client's receipt of it.
		hosts.mu.Lock()
		in, out := hosts.entered[r.id], hosts.written[r.id]
		hosts.mu.Unlock()
		if in.IsZero() || out.IsZero() {
			t.Fatalf("request %d was not seen by the handler", r.id)
		}
		net := in.Sub(r.sent) + r.first.Sub(out)
		// The server's own delays: from its handler to the request's
		// arrival in the simulation, and from the first token's due time
		// to its write.
		toSim = append(toSim, float64(srv.Driver.wallTime(rec.Arrival).Sub(in)))
		toWrite = append(toWrite, float64(out.Sub(srv.Driver.wallTime(rec.FirstToken))))
		nets = append(nets, float64(net))
		pre = append(pre, float64(in.Sub(r.sent)))
		cT = append(cT, float64(r.ttft-net))
		pT = append(pT, float64(rec.TTFT())/speed)
		if r.tpot >= 0 {
			cP = append(cP, float64(r.tpot))
			pP = append(pP, float64(rec.TPOT())/speed)
		}
	}
	allow := float64(lag.P50) * 1e3
	t.Logf("%d requests, speed %g: TTFT client less network p50 %.2f ms mean %.2f ms, replay p50 %.2f ms mean %.2f ms; TPOT client p50 %.3f ms mean %.3f ms, replay p50 %.3f ms mean %.3f ms; network p50 %.3f ms (to the handler %.3f ms) mean %.3f ms; server: handler to simulation p50 %.3f ms, first token due to written p50 %.3f ms mean %.3f ms; driver lag p50 %d µs p99 %d µs max %d µs",
		len(got), speed, median(cT)/1e6, mean(cT)/1e6, median(pT)/1e6, mean(pT)/1e6, median(cP)/1e6, mean(cP)/1e6, median(pP)/1e6, mean(pP)/1e6,
		median(nets)/1e6, median(pre)/1e6, mean(nets)/1e6, median(toSim)/1e6, median(toWrite)/1e6, mean(toWrite)/1e6, lag.P50, lag.P99, lag.Max)
	var fails []string
	for _, m := range []struct {
		name           string
		client, replay float64
	}{{"TTFT", median(cT), median(pT)}, {"TPOT", median(cP), median(pP)}} {
		if d := m.client - m.replay; d < -0.05*m.replay-allow || d > 0.05*m.replay+allow {
			fails = append(fails, fmt.Sprintf("median %s: client %.3f ms, replay %.3f ms: off by more than 5 %% plus %.3f ms", m.name, m.client/1e6, m.replay/1e6, allow/1e6))
		}
	}
	return fails
}

// attempts bounds the measurements of one case.
const attempts = 5

// loadAverage is the machine's one-minute load average ("?" where
// /proc/loadavg cannot be read).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func mean(v []float64) float64 {
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// TestRecordingReplaysExactly: the records of a served session (streamed
// and whole requests, shared prompt prefixes, clients that disconnect
// mid-stream) equal, field for field, those `servesim run` computes from
// its recording.
func TestRecordingReplaysExactly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arrivals.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	served := map[int64]metrics.Record{}
	onRecord := func(r *metrics.Record) {
		mu.Lock()
		served[r.ID] = *r
		mu.Unlock()
	}
	srv, base := start(t, build(t, smallScenario), Options{Config: Config{Speed: 4, Recorder: NewRecorder(f, f), OnRecord: onRecord}})
	var wg sync.WaitGroup
	for c := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := strings.Repeat("a shared system prompt ", 20) + fmt.Sprintf("question %d", c)
			switch c % 3 {
			case 0: // whole
				resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(fmt.Sprintf(`{"prompt": %q, "max_tokens": %d}`, prompt, 5+c)))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					t.Error(err)
				}
				resp.Body.Close()
			case 1: // streamed
				if _, err := stream(context.Background(), http.DefaultClient, base+"/v1/completions", fmt.Sprintf(`{"prompt": %q, "max_tokens": %d, "stream": true}`, prompt, 5+c)); err != nil {
					t.Error(err)
				}
			case 2: // disconnects after two tokens
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(fmt.Sprintf(`{"prompt": %q, "max_tokens": 400, "stream": true}`, prompt)))
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				sc := bufio.NewScanner(resp.Body)
				for n := 0; n < 2 && sc.Scan(); {
					if strings.HasPrefix(sc.Text(), "data: ") {
						n++
					}
				}
				cancel()
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	// The disconnected requests end in the simulation shortly after.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(served)
		mu.Unlock()
		if n == 24 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 24 requests ended", n)
		}
	}
	if err := srv.Driver.Stop(); err != nil {
		t.Fatal(err)
	}
	replayed := map[int64]metrics.Record{}
	if _, err := runner.Run(build(t, smallScenario+"workload:\n  trace: "+path+"\n"), runner.Options{OnRecord: func(r *metrics.Record) { replayed[r.ID] = *r }}); err != nil {
		t.Fatal(err)
	}
	aborted, cached := 0, 0
	for id, s := range served {
		if s.Reason == "aborted by the client" {
			aborted++
		}
		cached += s.CachedTokens
		if r := replayed[id]; r != s {
			t.Errorf("request %d:\nserved   %+v\nreplayed %+v", id, s, r)
		}
	}
	if len(replayed) != len(served) || aborted != 8 || cached == 0 {
		t.Fatalf("%d replayed of %d served, %d aborted (want 8), %d prompt tokens from the prefix cache (want > 0)", len(replayed), len(served), aborted, cached)
	}
}

// hostTimes records, per request id, when the server's handler was
// entered and when it wrote the first token (a wrapper around the
// handler, on the server's side of the network).
type hostTimes struct {
	mu               sync.Mutex
	entered, written map[int64]time.Time
}

var chunkID = regexp.MustCompile(`"id":"cmpl-(\d+)"`)

func (h *hostTimes) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&firstWrite{ResponseWriter: w, h: h, entered: time.Now()}, r)
	})
}

// firstWrite notes the time of the first write holding a token chunk.
type firstWrite struct {
	http.ResponseWriter
	h       *hostTimes
	entered time.Time
	done    bool
}

func (f *firstWrite) Write(b []byte) (int, error) {
	if !f.done {
		if m := chunkID.FindSubmatch(b); m != nil {
			now := time.Now()
			f.done = true
			id, err := strconv.ParseInt(string(m[1]), 10, 64)
			if err == nil {
				f.h.mu.Lock()
				f.h.entered[id], f.h.written[id] = f.entered, now
				f.h.mu.Unlock()
			}
		}
	}
	return f.ResponseWriter.Write(b)
}

// Flush passes flushes on (the handler streams through http.Flusher).
func (f *firstWrite) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

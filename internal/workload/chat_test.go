package workload

import (
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

func readAll(t *testing.T, src Source) []Entry {
	t.Helper()
	var out []Entry
	for {
		e, err := src.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

func chatConfig() Chat {
	sys := LengthDist{Kind: Fixed, Mean: 64}
	return Chat{
		Conversations: 50,
		Arrival:       ArrivalProcess{Kind: Poisson, Rate: 2},
		Turns:         LengthDist{Kind: Uniform, Min: 1, Max: 6},
		ThinkMs:       LengthDist{Kind: Fixed, Mean: 3000},
		SystemPrompts: 3,
		SystemPrompt:  &sys,
		Message:       LengthDist{Kind: LogNormal, Mean: 100, Sigma: 0.5},
		Output:        LengthDist{Kind: LogNormal, Mean: 80, Sigma: 0.5},
	}
}

// TestChatHistory: every turn's prompt is the previous prompt, the
// previous reply and a new message; ids are consecutive; the first turn
// carries the arrival and later ones the think time; conversations share
// one of the system prompts.
func TestChatHistory(t *testing.T) {
	src, err := NewChat(chatConfig(), 9)
	if err != nil {
		t.Fatal(err)
	}
	entries := readAll(t, src)
	if len(entries) != 50 {
		t.Fatalf("%d conversations, want 50", len(entries))
	}
	var id int64
	systems := map[string]int{}
	lastArrival := int64(-1)
	for _, e := range entries {
		if !strings.HasPrefix(e.Session, "chat-") || len(e.Requests) < 1 || len(e.Requests) > 6 {
			t.Fatalf("bad conversation %q with %d turns", e.Session, len(e.Requests))
		}
		systems[string(int32sToBytes(e.Requests[0].InputIDs[:64]))]++
		if a := e.Requests[0].Arrival; a < lastArrival {
			t.Fatalf("arrivals out of order: %d after %d", a, lastArrival)
		}
		lastArrival = e.Requests[0].Arrival
		for k, r := range e.Requests {
			if r.ID != id {
				t.Fatalf("id %d, want %d", r.ID, id)
			}
			id++
			if r.InputTokens != len(r.InputIDs) || r.OutputTokens != len(r.OutputIDs) {
				t.Fatalf("request %d: token counts do not match ids", r.ID)
			}
			if k == 0 {
				if r.Delay != 0 {
					t.Fatalf("first turn with a delay")
				}
				continue
			}
			if r.Delay != 3000*1e6 || r.Arrival != 0 {
				t.Fatalf("turn %d: delay %d arrival %d", k, r.Delay, r.Arrival)
			}
			prev := e.Requests[k-1]
			hist := append(slices.Clone(prev.InputIDs), prev.OutputIDs...)
			if !slices.Equal(r.InputIDs[:len(hist)], hist) || r.InputTokens <= len(hist) {
				t.Fatalf("turn %d does not extend the history", k)
			}
		}
	}
	if len(systems) != 3 {
		t.Fatalf("%d distinct system prompts, want 3", len(systems))
	}
	// Same seed, same conversations; another seed, others.
	again := readAll(t, must(NewChat(chatConfig(), 9)))
	other := readAll(t, must(NewChat(chatConfig(), 10)))
	if !slices.EqualFunc(entries, again, entryEqual) {
		t.Fatal("not deterministic")
	}
	if slices.EqualFunc(entries, other, entryEqual) {
		t.Fatal("seed has no effect")
	}
}

// TestChatMaxContext: no turn after the first exceeds max_context.
func TestChatMaxContext(t *testing.T) {
	cfg := chatConfig()
	cfg.Turns = LengthDist{Kind: Fixed, Mean: 20}
	cfg.MaxContext = 1000
	for _, e := range readAll(t, must(NewChat(cfg, 1))) {
		for k, r := range e.Requests {
			if k > 0 && r.InputTokens+r.OutputTokens > 1000 {
				t.Fatalf("turn %d has %d tokens of context", k, r.InputTokens+r.OutputTokens)
			}
		}
		if len(e.Requests) == 20 {
			t.Fatal("max_context never ended a conversation")
		}
	}
}

// TestSharedPrefixZipf: every prompt is one of the contexts plus a
// question, and with s = 1 over two contexts the first is drawn with
// probability 1/(1 + 1/2) = 2/3.
func TestSharedPrefixZipf(t *testing.T) {
	cfg := SharedPrefix{
		Requests: 6000, Arrival: ArrivalProcess{Kind: Constant, Rate: 10}, Prefixes: 2, ZipfS: 1,
		Prefix:   LengthDist{Kind: Fixed, Mean: 512},
		Question: LengthDist{Kind: Fixed, Mean: 20},
		Output:   LengthDist{Kind: Fixed, Mean: 8},
	}
	count := map[string]int{}
	for _, e := range readAll(t, must(NewSharedPrefix(cfg, 3))) {
		r := e.Requests[0]
		if r.InputTokens != 532 || len(r.InputIDs) != 532 || e.Session != "" {
			t.Fatalf("request %d: %d input tokens", r.ID, r.InputTokens)
		}
		count[string(int32sToBytes(r.InputIDs[:512]))]++
	}
	if len(count) != 2 {
		t.Fatalf("%d distinct contexts, want 2", len(count))
	}
	most := 0
	for _, n := range count {
		most = max(most, n)
	}
	// Binomial(6000, 2/3): standard deviation 36.5; allow 4 of them.
	if p := float64(most); math.Abs(p-4000) > 146 {
		t.Fatalf("most popular context drawn %d times of 6000, want about 4000", most)
	}
}

func TestChatValidate(t *testing.T) {
	cfg := chatConfig()
	cfg.SystemPrompt = nil
	cfg.Conversations = 0
	cfg.Arrival.Rate = math.NaN()
	err := cfg.Validate()
	for _, want := range []string{"workload.chat.conversations", "workload.chat.system_prompt", "workload.chat.arrival.rate"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
	sp := SharedPrefix{Requests: 1, Prefixes: 0, ZipfS: -1}
	err = sp.Validate()
	for _, want := range []string{"workload.shared_prefix.prefixes", "workload.shared_prefix.zipf_s", "workload.shared_prefix.prefix.kind"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
}

func must(s Source, err error) Source {
	if err != nil {
		panic(err)
	}
	return s
}

func int32sToBytes(v []int32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return b
}

func entryEqual(a, b Entry) bool {
	return a.Session == b.Session && slices.EqualFunc(a.Requests, b.Requests, func(x, y Request) bool {
		return x.ID == y.ID && x.Arrival == y.Arrival && x.Delay == y.Delay &&
			slices.Equal(x.InputIDs, y.InputIDs) && slices.Equal(x.OutputIDs, y.OutputIDs)
	})
}

// TestTakeCountsRequests: workload.limit counts requests, not entries: a
// session's sub-requests count one each and the session is cut at the
// limit.
func TestTakeCountsRequests(t *testing.T) {
	cfg := chatConfig()
	cfg.Turns = LengthDist{Kind: Fixed, Mean: 4}
	es := readAll(t, Take(must(NewChat(cfg, 1)), 10))
	n := 0
	for _, e := range es {
		n += len(e.Requests)
	}
	if n != 10 || len(es) != 3 || len(es[2].Requests) != 2 {
		t.Fatalf("Take(10) over 4-turn conversations: %d requests in %d entries", n, len(es))
	}
}

package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// DefaultMaxBody is the largest request body accepted (larger: 413).
const DefaultMaxBody = 8 << 20

// Options configures a Server.
type Options struct {
	Config
	// ModelName is the served model name (default: the scenario's model).
	ModelName string
	// Version is what /version reports.
	Version string
	// MaxBody bounds request bodies in bytes (0: DefaultMaxBody).
	MaxBody int64
	// DefaultMaxTokens is max_tokens for requests that give none (0:
	// max_model_len minus the prompt, as vLLM).
	DefaultMaxTokens int
}

// Server is a served simulation: a Driver and the HTTP handlers over it.
type Server struct {
	Driver  *Driver
	Metrics *Metrics
	opts    Options
	lim     limits
	created int64
}

// NewServer builds the driver and metrics of a served simulation of b;
// Start starts its clock.
func NewServer(b *assemble.Built, opts Options) (*Server, error) {
	if opts.ModelName == "" {
		opts.ModelName = b.Scenario().Model
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	lim := limits{model: opts.ModelName, defaultMax: opts.DefaultMaxTokens}
	for _, in := range b.Instances() {
		if in.Role == config.RolePrefill {
			continue // a prompt must also fit where it is decoded
		}
		if n := in.Engine.MaxModelLen; n > lim.maxModelLen {
			lim.maxModelLen = n
		}
		lim.maxKVTokens = max(lim.maxKVTokens, in.NumBlocks*in.BlockSize)
	}
	if lim.maxModelLen == 0 {
		return nil, errors.New("serve: no instance decodes: the scenario needs a mixed or decode instance")
	}
	m := NewMetrics(opts.ModelName, b.NumInstances(), lim.maxModelLen)
	for i, in := range b.Instances() {
		m.CacheConfig(i, in.BlockSize, in.NumBlocks, in.Engine.PrefixCaching)
	}
	opts.Metrics = m
	d, err := NewDriver(b, opts.Config)
	if err != nil {
		return nil, err
	}
	return &Server{Driver: d, Metrics: m, opts: opts, lim: lim, created: time.Now().Unix()}, nil
}

// ModelName is the served model name.
func (s *Server) ModelName() string { return s.opts.ModelName }

// Start starts the simulation's clock.
func (s *Server) Start() { s.Driver.Start() }

// Handler returns the HTTP API. instance >= 0 makes it the API of that one
// instance (its requests are served there and /metrics shows it alone);
// -1 is the whole cluster behind the scenario's router.
func (s *Server) Handler(instance int) http.Handler {
	mux := http.NewServeMux()
	var g prometheus.Gatherer = s.Metrics.Registry
	if instance >= 0 {
		g = instanceGatherer{g: g, engine: strconv.Itoa(instance)}
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.Driver.Err(); err != nil {
			writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()})
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": s.opts.Version})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{
			"id": s.opts.ModelName, "object": "model", "created": s.created, "owned_by": "vllm",
			"root": s.opts.ModelName, "parent": nil, "max_model_len": s.lim.maxModelLen, "permission": []any{},
		}}})
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false, instance) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true, instance) })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A client that went away cannot be told anything more.
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return
	}
}

func writeError(w http.ResponseWriter, e *apiError) { writeJSON(w, e.Status, e.body()) }

// complete serves one completion or chat completion.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool, instance int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "RequestEntityTooLarge",
				Message: fmt.Sprintf("the request body exceeds the limit of %d bytes", tooBig.Limit)})
			return
		}
		writeError(w, badRequest("", "reading the request body: %v", err))
		return
	}
	var p *parsed
	var aerr *apiError
	if chat {
		p, aerr = s.lim.parseChat(body)
	} else {
		p, aerr = s.lim.parseCompletion(body)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	st, err := s.Driver.Submit(workload.Request{InputTokens: len(p.ids), OutputTokens: p.maxTokens, InputIDs: p.ids}, instance)
	if err != nil {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: err.Error()})
		return
	}
	out := &writer{s: s, st: st, p: p, w: w}
	if chat {
		out.id, out.object = fmt.Sprintf("chatcmpl-%d", st.ID), "chat.completion"
	} else {
		out.id, out.object = fmt.Sprintf("cmpl-%d", st.ID), "text_completion"
	}
	ctx := r.Context()
	for {
		select {
		case <-ctx.Done():
			s.Driver.Abort(st)
			return
		case <-st.Ready():
		}
		tokens, done, rec, err := st.State()
		if err != nil {
			e := &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: err.Error()}
			if out.started {
				out.streamError(e)
			} else {
				writeError(w, e)
			}
			return
		}
		if p.stream {
			if !out.stream(tokens, done, &rec) {
				s.Driver.Abort(st) // the client stopped reading
				return
			}
		} else if done {
			out.whole(&rec)
		}
		if done {
			return
		}
	}
}

// writer writes one request's response.
type writer struct {
	s          *Server
	st         *Stream
	p          *parsed
	w          http.ResponseWriter
	bw         *bufio.Writer
	id, object string
	started    bool  // headers sent
	sent       int   // tokens written
	err        error // a chunk that could not be encoded
}

// failure answers a request the simulation did not finish (a stream that
// has started ends without [DONE]).
func failure(rec *metrics.Record) *apiError {
	switch {
	case rec.Outcome == metrics.Rejected:
		return &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the server is overloaded: " + rec.Reason}
	case strings.HasPrefix(rec.Reason, "unfit"):
		return badRequest("", "%s", rec.Reason)
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "request failed in the simulation: " + rec.Reason}
}

func (o *writer) usage(rec *metrics.Record) *usage {
	return &usage{PromptTokens: o.st.Prompt, CompletionTokens: rec.Generated, TotalTokens: o.st.Prompt + rec.Generated}
}

// whole writes a non-streaming response.
func (o *writer) whole(rec *metrics.Record) {
	if rec.Outcome != metrics.Finished {
		if rec.Reason != cluster.AbortedReason {
			writeError(o.w, failure(rec))
		}
		return
	}
	var text strings.Builder
	for k := range rec.Generated {
		text.WriteString(word(o.st.ID, k))
	}
	fin := "length"
	resp := response{ID: o.id, Object: o.object, Created: time.Now().Unix(), Model: o.s.opts.ModelName, Usage: o.usage(rec)}
	if o.p.chat {
		resp.Choices = []chatChoice{{Message: &chatMessageOut{Role: "assistant", Content: text.String(), ToolCalls: []any{}}, FinishReason: &fin}}
	} else {
		resp.Choices = []completionChoice{{Text: text.String(), FinishReason: &fin}}
	}
	writeJSON(o.w, http.StatusOK, resp)
}

// stream writes the SSE chunks of the tokens emitted since the last call
// and, when done, the end of the stream. It reports false when the client
// cannot be written to.
func (o *writer) stream(tokens int, done bool, rec *metrics.Record) bool {
	if done && rec.Outcome != metrics.Finished {
		switch {
		case rec.Reason == cluster.AbortedReason: // the client is gone
		case o.started:
			o.streamError(failure(rec))
		default:
			writeError(o.w, failure(rec))
		}
		return true
	}
	if tokens <= o.sent && !done {
		return true
	}
	if !o.started {
		// Headers go out with the first token (or the end), so that a
		// request refused in the simulation still gets its status code.
		h := o.w.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		o.w.WriteHeader(http.StatusOK)
		o.bw = bufio.NewWriterSize(o.w, 4096)
		o.started = true
		if o.p.chat {
			o.chunk(chatChoice{Delta: &chatDelta{Role: "assistant"}}, nil)
		}
	}
	for ; o.sent < tokens; o.sent++ {
		var fin *string
		if done && o.sent == tokens-1 {
			s := "length"
			fin = &s
		}
		text := word(o.st.ID, o.sent)
		if o.p.chat {
			o.chunk(chatChoice{Delta: &chatDelta{Content: text}, FinishReason: fin}, nil)
		} else {
			o.chunk(completionChoice{Text: text, FinishReason: fin}, nil)
		}
	}
	if done {
		if o.p.includeUsage {
			o.chunk(nil, o.usage(rec))
		}
		o.bw.WriteString("data: [DONE]\n\n")
	}
	if err := o.bw.Flush(); err != nil || o.err != nil {
		return false
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

// streamError ends a stream that has started with an error event and
// [DONE], as vLLM ends a stream whose request failed.
func (o *writer) streamError(e *apiError) {
	b, err := json.Marshal(e.body())
	if err != nil {
		return // an errorBody always marshals
	}
	o.bw.WriteString("data: ")
	o.bw.Write(b)
	o.bw.WriteString("\n\ndata: [DONE]\n\n")
	if o.bw.Flush() == nil {
		if f, ok := o.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// chunk writes one SSE event holding choice (nil: none, the usage chunk).
func (o *writer) chunk(choice any, u *usage) {
	resp := response{ID: o.id, Object: o.object, Created: time.Now().Unix(), Model: o.s.opts.ModelName, Usage: u}
	if o.p.chat {
		resp.Object = "chat.completion.chunk"
	}
	if choice == nil {
		resp.Choices = []any{}
	} else {
		resp.Choices = []any{choice}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		o.err = err
		return
	}
	// Write errors are sticky in the bufio.Writer: Flush reports them.
	o.bw.WriteString("data: ")
	o.bw.Write(b)
	o.bw.WriteString("\n\n")
}

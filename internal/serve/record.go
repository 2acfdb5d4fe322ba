package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/servesim/servesim/internal/workload"
)

// Recorder writes the arrivals of a served session as a JSONL trace that
// `servesim run --workload FILE` replays exactly: one plain line per
// request, in id (arrival) order, with its prompt length and token ids,
// its output length, its arrival time and, when its client went away
// before it ended, abort_time_ns. A line is written once its request has
// ended (its abort is known by then) and every earlier one was written,
// so the recorder holds only requests in flight and those behind them.
type Recorder struct {
	w       *bufio.Writer
	c       io.Closer
	pending map[int64]*recLine
	next    int64 // id of the next line to write
	err     error
}

type recLine struct {
	InputToks   int     `json:"input_toks"`
	OutputToks  int     `json:"output_toks"`
	ArrivalNs   int64   `json:"arrival_time_ns"`
	InputTokIDs []int32 `json:"input_tok_ids,omitempty"`
	AbortNs     int64   `json:"abort_time_ns,omitempty"`
	ended       bool
}

// NewRecorder writes to w; Close flushes it and closes c (if not nil).
func NewRecorder(w io.Writer, c io.Closer) *Recorder {
	return &Recorder{w: bufio.NewWriter(w), c: c, pending: map[int64]*recLine{}}
}

func (r *Recorder) arrive(id int64, req *workload.Request) {
	r.pending[id] = &recLine{InputToks: req.InputTokens, OutputToks: req.OutputTokens, ArrivalNs: req.Arrival, InputTokIDs: req.InputIDs}
}

func (r *Recorder) abort(id, at int64) {
	if l := r.pending[id]; l != nil && !l.ended {
		l.AbortNs = max(at, l.ArrivalNs, 1)
	}
}

func (r *Recorder) ended(id int64) {
	if l := r.pending[id]; l != nil {
		l.ended = true
	}
	for {
		l := r.pending[r.next]
		if l == nil || !l.ended {
			return
		}
		r.write(l)
		delete(r.pending, r.next)
		r.next++
	}
}

func (r *Recorder) write(l *recLine) {
	if r.err != nil {
		return
	}
	b, err := json.Marshal(l)
	if err == nil {
		b = append(b, '\n')
		_, err = r.w.Write(b)
	}
	if err != nil {
		r.err = fmt.Errorf("record: %w", err)
	}
}

// Close writes the requests still in flight (in order; a replay runs them
// to their end), flushes and closes the file.
func (r *Recorder) Close() error {
	for ; ; r.next++ {
		l := r.pending[r.next]
		if l == nil {
			break
		}
		r.write(l)
		delete(r.pending, r.next)
	}
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = fmt.Errorf("record: %w", err)
	}
	if r.c != nil {
		if err := r.c.Close(); err != nil && r.err == nil {
			r.err = fmt.Errorf("record: %w", err)
		}
	}
	return r.err
}

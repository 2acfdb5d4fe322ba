package metrics

import (
	"bufio"
	"io"
	"strconv"
)

// Columns are the per-request output columns, in order. The CSV header and
// the JSONL keys use these names.
var Columns = []string{
	"id", "session", "prefill_instance", "decode_instance",
	"input_tokens", "output_tokens", "generated", "cached_tokens",
	"arrival_ms", "queued_ms", "scheduled_ms", "first_token_ms", "last_token_ms",
	"queue_delay_ms", "ttft_ms", "tpot_ms", "max_itl_ms", "e2e_ms",
	"preemptions", "prefill_end_ms", "reserved_ms",
	"transfer_start_ms", "transfer_end_ms", "handoff_wait_ms",
	"decode_capacity_wait_ms", "transfer_ms",
	"reprefills", "retries", "outcome", "reason",
}

// TierColumns are the per-request columns added after Columns when KV
// tiers are on (WithTierColumns): the time spent loading prefixes from a
// lower tier and the tier the latest loaded prefix came from (gpu when
// none was loaded).
var TierColumns = []string{"tier_load_ms", "prefix_tier"}

// FrontEndColumns are the per-request columns added last when a front end
// is simulated (WithFrontEndColumns): the engine-side times beside the
// client-side ones of Columns.
var FrontEndColumns = []string{"engine_arrival_ms", "engine_first_token_ms", "engine_last_token_ms", "engine_ttft_ms"}

// Option changes what a writer writes.
type Option func(*options)

type options struct{ tiers, swap, frontEnd, priority, faults bool }

// PriorityColumn is the per-request column added last when requests have
// priorities (WithPriorityColumn).
const PriorityColumn = "priority"

// WithPriorityColumn adds PriorityColumn to request rows.
func WithPriorityColumn() Option { return func(o *options) { o.priority = true } }

// WithFrontEndColumns adds FrontEndColumns to request rows.
func WithFrontEndColumns() Option { return func(o *options) { o.frontEnd = true } }

// columns are the request-row columns of o, in order.
func (o options) columns() []string {
	cols := Columns
	if o.tiers {
		cols = append(cols[:len(cols):len(cols)], TierColumns...)
	}
	if o.frontEnd {
		cols = append(cols[:len(cols):len(cols)], FrontEndColumns...)
	}
	if o.priority {
		cols = append(cols[:len(cols):len(cols)], PriorityColumn)
	}
	return cols
}

// WithTierColumns adds the KV-tier columns (TierColumns to request rows,
// TierSeriesColumns to time series rows).
func WithTierColumns() Option { return func(o *options) { o.tiers = true } }

// WithSwapColumns adds the swap-preemption columns (SwapSeriesColumns) to
// time series rows; request rows are unchanged.
func WithSwapColumns() Option { return func(o *options) { o.swap = true } }

// WithFaultColumns adds the fault and autoscaling columns
// (FaultSeriesColumns) to time series rows; request rows are unchanged.
func WithFaultColumns() Option { return func(o *options) { o.faults = true } }

func resolveOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// tierNames names Record.PrefixTier values.
var tierNames = [...]string{"gpu", "host", "disk"}

// rowEncoder appends one record's fields in Columns order, either as a CSV
// row or as a JSON object. col counts fields written so far.
type rowEncoder struct {
	b        []byte
	json     bool
	col      int
	tiers    bool     // append TierColumns
	frontEnd bool     // append FrontEndColumns
	priority bool     // append PriorityColumn
	names    []string // the columns, in order
}

// key writes the separator and, for JSON, the quoted key of the next field.
func (e *rowEncoder) key() {
	if e.col > 0 {
		e.b = append(e.b, ',')
	}
	if e.json {
		e.b = append(e.b, '"')
		e.b = append(e.b, e.names[e.col]...)
		e.b = append(e.b, '"', ':')
	}
	e.col++
}

func (e *rowEncoder) null() {
	if e.json {
		e.b = append(e.b, "null"...)
	}
}

// int writes an integer field.
func (e *rowEncoder) int(v int64) {
	e.key()
	e.b = strconv.AppendInt(e.b, v, 10)
}

// opt writes an integer field that is absent (empty / null) when negative.
func (e *rowEncoder) opt(v int64) {
	e.key()
	if v < 0 {
		e.null()
		return
	}
	e.b = strconv.AppendInt(e.b, v, 10)
}

// ms writes a time or duration in ns as milliseconds, absent when negative.
func (e *rowEncoder) ms(ns int64) {
	e.key()
	if ns < 0 {
		e.null()
		return
	}
	e.b = appendMs(e.b, ns)
}

// str writes a string field.
func (e *rowEncoder) str(s string) {
	e.key()
	if e.json {
		e.b = appendJSONString(e.b, s)
	} else {
		e.b = appendCSVString(e.b, s)
	}
}

// record appends r in Columns order.
func (e *rowEncoder) record(r *Record) {
	e.col = 0
	if e.json {
		e.b = append(e.b, '{')
	}
	e.int(r.ID)
	e.str(r.Session)
	e.opt(int64(r.PrefillInstance))
	e.opt(int64(r.DecodeInstance))
	e.int(int64(r.InputTokens))
	e.int(int64(r.OutputTokens))
	e.int(int64(r.Generated))
	e.int(int64(r.CachedTokens))
	e.ms(r.Arrival)
	e.ms(r.Queued)
	e.ms(r.Scheduled)
	e.ms(r.FirstToken)
	e.ms(r.LastToken)
	e.ms(r.QueueDelay())
	e.ms(r.TTFT())
	e.ms(r.TPOT())
	if r.Generated < 2 {
		e.ms(-1) // no gap between tokens exists
	} else {
		e.ms(r.MaxITL)
	}
	e.ms(r.E2E())
	e.int(int64(r.Preemptions))
	e.ms(r.PrefillEnd)
	e.ms(r.Reserved)
	e.ms(r.TransferStart)
	e.ms(r.TransferEnd)
	e.ms(r.HandoffWait)
	e.ms(r.CapacityWait)
	e.ms(r.TransferTime())
	e.int(int64(r.Reprefills))
	e.int(int64(r.Retries))
	e.str(r.Outcome.String())
	e.str(r.Reason)
	if e.tiers {
		e.ms(r.TierLoadNs)
		t := int(r.PrefixTier)
		if t < 0 || t >= len(tierNames) {
			t = 0
		}
		e.str(tierNames[t])
	}
	if e.frontEnd {
		e.ms(r.EngineArrival)
		e.ms(r.EngineFirstToken)
		e.ms(r.EngineLastToken)
		e.ms(r.EngineTTFT())
	}
	if e.priority {
		e.int(int64(r.Priority))
	}
	if e.json {
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '\n')
}

// CSVWriter streams records as CSV rows (header first). Absent values are
// empty cells; times are milliseconds with three decimals. Nothing is
// retained between calls. Not safe for concurrent use.
type CSVWriter struct {
	bw  *bufio.Writer
	enc rowEncoder
}

// NewCSVWriter returns a writer that writes the header and then one row per
// Write to w, buffered. Call Flush at the end.
func NewCSVWriter(w io.Writer, opts ...Option) *CSVWriter {
	c := &CSVWriter{bw: bufio.NewWriterSize(w, 64<<10)}
	c.enc.b = make([]byte, 0, 512)
	o := resolveOptions(opts)
	c.enc.tiers, c.enc.frontEnd, c.enc.priority, c.enc.names = o.tiers, o.frontEnd, o.priority, o.columns()
	for i, name := range c.enc.names {
		if i > 0 {
			c.enc.b = append(c.enc.b, ',')
		}
		c.enc.b = append(c.enc.b, name...)
	}
	c.enc.b = append(c.enc.b, '\n')
	c.bw.Write(c.enc.b) // a write error is sticky and reported by Write/Flush
	return c
}

// Write appends one record.
func (c *CSVWriter) Write(r *Record) error {
	c.enc.b = c.enc.b[:0]
	c.enc.record(r)
	_, err := c.bw.Write(c.enc.b)
	return err
}

// Flush writes buffered data to the underlying writer.
func (c *CSVWriter) Flush() error { return c.bw.Flush() }

// JSONLWriter streams records as JSON lines, one object per record with the
// keys of Columns in order. Absent values are null; times are milliseconds
// with three decimals. Not safe for concurrent use.
type JSONLWriter struct {
	bw  *bufio.Writer
	enc rowEncoder
}

// NewJSONLWriter returns a buffered JSON-lines writer to w. Call Flush at
// the end.
func NewJSONLWriter(w io.Writer, opts ...Option) *JSONLWriter {
	j := &JSONLWriter{bw: bufio.NewWriterSize(w, 64<<10)}
	j.enc.json = true
	o := resolveOptions(opts)
	j.enc.tiers, j.enc.frontEnd, j.enc.priority, j.enc.names = o.tiers, o.frontEnd, o.priority, o.columns()
	j.enc.b = make([]byte, 0, 1024)
	return j
}

// Write appends one record.
func (j *JSONLWriter) Write(r *Record) error {
	j.enc.b = j.enc.b[:0]
	j.enc.record(r)
	_, err := j.bw.Write(j.enc.b)
	return err
}

// Flush writes buffered data to the underlying writer.
func (j *JSONLWriter) Flush() error { return j.bw.Flush() }

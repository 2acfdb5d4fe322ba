package serve

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// ErrStopped is returned by Submit once the driver has stopped (Stop, or
// a simulation error).
var ErrStopped = errors.New("serve: the simulation has stopped")

// Stream is one request's view of the simulation, shared between the
// driver (which publishes) and the request's handler (which waits on
// Ready and reads State).
type Stream struct {
	// ID is the request's id in the simulation (its line in a recording).
	ID int64
	// Prompt and MaxTokens are the request's prompt and output lengths.
	Prompt, MaxTokens int

	ready chan struct{} // capacity 1: something changed

	mu     sync.Mutex
	tokens int            // output tokens emitted so far
	done   bool           // final is set
	final  metrics.Record // the terminal record
	failed string         // the driver stopped before the request ended

	sent    int   // driver only: tokens published so far
	arrival int64 // driver only: simulated arrival time
}

// Ready is signalled (coalescing) whenever the stream's state changes.
func (s *Stream) Ready() <-chan struct{} { return s.ready }

// State returns the output tokens emitted so far, whether the request has
// ended, and when it has, its terminal record; err is set when the
// simulation stopped before the request ended.
func (s *Stream) State() (tokens int, done bool, rec metrics.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != "" {
		err = errors.New(s.failed)
	}
	return s.tokens, s.done, s.final, err
}

func (s *Stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Config configures a Driver.
type Config struct {
	// Speed is simulated seconds per wall-clock second (> 0; 1: real time).
	Speed float64
	// Recorder, if set, receives every arrival and abort (--record).
	Recorder *Recorder
	// Metrics, if set, is kept up to date from the simulation.
	Metrics *Metrics
	// OnRecord, if set, sees every request's terminal record, on the
	// driver's goroutine (it must not block nor keep the pointer).
	OnRecord func(*metrics.Record)
}

// msg is what a handler asks of the driver.
type msg struct {
	wall  time.Time
	req   workload.Request // arrival: prompt, output, ids
	pin   int              // arrival: instance to serve it (-1: the router's choice)
	abort *Stream          // abort: the request whose client went away
	reply chan *Stream     // arrival: the new stream
}

// Driver runs one simulation in real time.
type Driver struct {
	b     *assemble.Built
	cfg   Config
	sim   *cluster.Sim
	live  *workload.Live
	pins  *pinRouter
	start time.Time

	in      chan msg
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	started atomic.Bool

	// Owned by the loop goroutine.
	streams     map[int64]*Stream
	dirty       []*Stream
	lastArrival int64
	err         error

	lagMu sync.Mutex
	lag   *hdrhistogram.Histogram // µs
	busy  time.Duration           // see LagStats
}

// NewDriver prepares a real-time simulation of b; Start runs it.
func NewDriver(b *assemble.Built, cfg Config) (*Driver, error) {
	if !(cfg.Speed > 0) {
		return nil, fmt.Errorf("speed must be > 0 (got %g); it is simulated seconds per wall-clock second", cfg.Speed)
	}
	d := &Driver{b: b, cfg: cfg, live: &workload.Live{}, in: make(chan msg, 1024), quit: make(chan struct{}), done: make(chan struct{}),
		streams: map[int64]*Stream{}, lag: hdrhistogram.New(1, 600_000_000, 3)}
	inner, err := b.Router()
	if err != nil {
		return nil, err
	}
	d.pins = &pinRouter{inner: inner, pins: map[int64]int{}}
	sim, err := b.NewSimFrom(d.live, d, d.pins)
	if err != nil {
		return nil, err
	}
	d.sim = sim
	return d, nil
}

// Start starts the driver's goroutine; simulated time 0 is now. Call it
// once.
func (d *Driver) Start() {
	d.start = time.Now()
	d.started.Store(true)
	go d.loop()
}

// Stop stops the driver (requests in flight fail with "server stopped"),
// closes the recorder and returns the simulation's error, if it stopped
// on one. A driver never started just closes its recorder.
func (d *Driver) Stop() error {
	d.once.Do(func() {
		close(d.quit)
		if !d.started.Load() {
			d.shutdown()
		}
	})
	<-d.done
	return d.err
}

// Done is closed once the driver has stopped.
func (d *Driver) Done() <-chan struct{} { return d.done }

// Err returns the error the simulation stopped on (nil while it runs).
func (d *Driver) Err() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// Submit hands a request to the simulation, arriving now, and returns its
// stream. pin >= 0 serves it on that instance (one port per instance).
func (d *Driver) Submit(req workload.Request, pin int) (*Stream, error) {
	m := msg{wall: time.Now(), req: req, pin: pin, reply: make(chan *Stream, 1)}
	select {
	case d.in <- m:
	case <-d.done:
		return nil, ErrStopped
	}
	select {
	case s := <-m.reply:
		return s, nil
	case <-d.done:
		return nil, ErrStopped
	}
}

// Abort tells the simulation that the client of s went away now.
func (d *Driver) Abort(s *Stream) {
	select {
	case d.in <- msg{wall: time.Now(), abort: s}:
	case <-d.done:
	}
}

// LagStats summarises how late the driver processed simulation events
// behind the wall clock (times the speed): the distribution over the
// moments an event was due, in wall-clock microseconds.
// Busy is the wall-clock time the driver spent simulating and taking
// requests (not sleeping, nor waiting out the last stretch before an
// event), and Elapsed the time since Start: a driver keeps up with real
// time while Busy is well below Elapsed, whatever stalls the machine
// imposes on it now and then (they show in the lag's tail).
type LagStats struct {
	Samples             int64
	P50, P99, P999, Max int64 // µs
	Busy, Elapsed       time.Duration
}

// Lag returns the lag distribution so far.
func (d *Driver) Lag() LagStats {
	d.lagMu.Lock()
	defer d.lagMu.Unlock()
	h := d.lag
	return LagStats{Samples: h.TotalCount(), P50: h.ValueAtQuantile(50), P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9), Max: h.Max(),
		Busy: d.busy, Elapsed: time.Since(d.start)}
}

// spinWindow is how long before an event's wall-clock time the driver
// stops sleeping and waits awake (a timer wakes 0.1 to 1 ms late).
const spinWindow = time.Millisecond

// simTime is the simulated time of wall-clock moment w.
func (d *Driver) simTime(w time.Time) int64 {
	return int64(float64(w.Sub(d.start)) * d.cfg.Speed)
}

// wallTime is the wall-clock moment of simulated time t.
func (d *Driver) wallTime(t int64) time.Time {
	return d.start.Add(time.Duration(float64(t) / d.cfg.Speed))
}

func (d *Driver) loop() {
	defer d.shutdown()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// What handlers sent first: each message is stamped with the
		// moment it was sent, so it must be injected before the clock
		// moves past that moment (else a request stamped before a step
		// boundary would miss the batch formed there).
		t0 := time.Now()
		for n := len(d.in); n > 0; n-- {
			d.handle(<-d.in)
		}
		ok := d.err == nil && d.advance()
		d.lagMu.Lock()
		d.busy += time.Since(t0)
		d.lagMu.Unlock()
		if !ok {
			return
		}
		wait := time.Hour
		if at, ok := d.sim.NextEvent(); ok {
			wait = time.Until(d.wallTime(at))
		}
		if wait <= spinWindow {
			// Due now or very soon: timers wake a fraction of a
			// millisecond late, so the last stretch is waited out
			// awake, taking what handlers send meanwhile.
			select {
			case m := <-d.in:
				d.handle(m)
			case <-d.quit:
				return
			default:
				if wait > 0 {
					runtime.Gosched()
				}
			}
			continue
		}
		timer.Reset(wait - spinWindow)
		select {
		case m := <-d.in:
			d.handle(m)
		case <-timer.C:
		case <-d.quit:
			return
		}
	}
}

// advance runs the simulation up to the wall clock and publishes what
// changed. It reports false when the simulation stopped.
func (d *Driver) advance() bool {
	target := d.simTime(time.Now())
	if at, ok := d.sim.NextEvent(); ok && at <= target {
		lagUs := int64(float64(target-at)/d.cfg.Speed) / 1000
		d.lagMu.Lock()
		// Clamped to the histogram's range (a machine that slept for
		// more than ten minutes): RecordValue cannot fail then.
		if err := d.lag.RecordValue(min(max(lagUs, 1), d.lag.HighestTrackableValue())); err != nil {
			d.lagMu.Unlock()
			d.err = fmt.Errorf("serve: lag of %d µs: %w", lagUs, err)
			return false
		}
		d.lagMu.Unlock()
		if m := d.cfg.Metrics; m != nil {
			m.lag.Observe(float64(lagUs) / 1e6)
		}
	}
	stopped, err := d.sim.RunUntil(target)
	// The gauges first: a client that has its last token may scrape
	// /metrics at once.
	if m := d.cfg.Metrics; m != nil {
		m.sample(d.sim)
	}
	d.publish()
	switch {
	case err != nil:
		d.err = fmt.Errorf("serve: simulation: %w", err)
		return false
	case stopped:
		d.err = fmt.Errorf("serve: simulation stopped: %s", d.sim.LimitReached())
		return false
	}
	return true
}

// handle turns a handler's message into an arrival or an abort at the
// simulated time of its wall-clock moment, or, when the simulation has
// already processed an event at or after that moment, 1 ns after it: a
// replay of the recording schedules the same event earlier (with a
// smaller sequence number), and an event tied with one already processed
// would then come first there and last here.
func (d *Driver) handle(m msg) {
	at := d.simTime(m.wall)
	if now := d.sim.Now(); at <= now {
		at = now + 1
	}
	if m.abort != nil {
		if _, live := d.streams[m.abort.ID]; !live {
			return // ended already
		}
		if err := d.sim.AbortAt(m.abort.ID, at); err != nil {
			d.err = err
			return
		}
		if r := d.cfg.Recorder; r != nil {
			r.abort(m.abort.ID, at)
		}
		return
	}
	at = max(at, d.lastArrival)
	d.lastArrival = at
	req := m.req
	req.Arrival = at
	id := d.live.Add(req)
	s := &Stream{ID: id, Prompt: req.InputTokens, MaxTokens: req.OutputTokens, ready: make(chan struct{}, 1), arrival: at}
	d.streams[id] = s
	if m.pin >= 0 {
		d.pins.pins[id] = m.pin
	}
	if r := d.cfg.Recorder; r != nil {
		r.arrive(id, &req)
	}
	if err := d.sim.Pull(); err != nil {
		d.err = err
	}
	m.reply <- s
}

// publish hands the streams that changed their new state.
func (d *Driver) publish() {
	for _, s := range d.dirty {
		s.signal()
	}
	d.dirty = d.dirty[:0]
}

// shutdown fails every stream still open and marks the driver done.
func (d *Driver) shutdown() {
	why := "server stopped"
	if d.err != nil {
		why = d.err.Error()
	}
	for _, s := range d.streams {
		s.mu.Lock()
		s.failed = why
		s.mu.Unlock()
		s.signal()
	}
	if r := d.cfg.Recorder; r != nil {
		if err := r.Close(); err != nil && d.err == nil {
			d.err = err
		}
	}
	close(d.done)
}

// Advance implements cluster.Observer.
func (d *Driver) Advance(int64) {}

// StepDone implements cluster.Observer: the running requests of the
// instance that stepped publish their new tokens.
func (d *Driver) StepDone(inst int, r *engine.StepResult) {
	if m := d.cfg.Metrics; m != nil {
		m.step(inst, r)
	}
	if len(d.streams) == 0 || r.GenTokens == 0 {
		return
	}
	d.sim.Engines()[inst].EachRunning(func(id int64, generated int) {
		s := d.streams[id]
		if s == nil || generated <= s.sent {
			return
		}
		if s.sent == 0 {
			if m := d.cfg.Metrics; m != nil {
				m.firstToken(inst, r.End-s.arrival) // as vLLM, when it is emitted
			}
		}
		s.sent = generated
		s.mu.Lock()
		s.tokens = generated
		s.mu.Unlock()
		d.dirty = append(d.dirty, s)
	})
}

// Terminal implements cluster.Observer.
func (d *Driver) Terminal(rec *metrics.Record) {
	if m := d.cfg.Metrics; m != nil {
		m.terminal(rec)
	}
	if r := d.cfg.Recorder; r != nil {
		r.ended(rec.ID)
	}
	if d.cfg.OnRecord != nil {
		d.cfg.OnRecord(rec)
	}
	delete(d.pins.pins, rec.ID)
	s := d.streams[rec.ID]
	if s == nil {
		return
	}
	delete(d.streams, rec.ID)
	s.mu.Lock()
	s.tokens, s.done, s.final = rec.Generated, true, *rec
	s.mu.Unlock()
	d.dirty = append(d.dirty, s)
}

// pinRouter serves a request on the instance its port stands for (one
// port per instance), else asks the scenario's router.
type pinRouter struct {
	inner cluster.Router
	pins  map[int64]int
}

// Route implements cluster.Router.
func (p *pinRouter) Route(req *workload.Request, candidates []int, v cluster.View) int {
	if i, ok := p.pins[req.ID]; ok {
		for _, c := range candidates {
			if c == i {
				return i
			}
		}
	}
	return p.inner.Route(req, candidates, v)
}

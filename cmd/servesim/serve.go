package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/serve"
	"github.com/spf13/cobra"
)

type serveFlags struct {
	scenario    scenarioFlags
	addr        string
	speed       float64
	record      string
	jsonl       string
	perInstance bool
	modelName   string
	maxTokens   int
	duration    time.Duration
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the scenario's cluster in real time behind an OpenAI-compatible API (vLLM's)",
		Long: `Run the scenario's cluster in real time (simulated time = wall time × --speed),
fed by HTTP requests instead of the scenario's workload: /v1/completions and
/v1/chat/completions (streaming and not), /v1/models, /health, /version and
Prometheus /metrics under vLLM's metric names. See docs/serve.md.

The scenario's workload section and run limits are not used. With --record FILE
the arrivals (and client disconnects) are written as a trace that
'servesim run -c SCENARIO --workload FILE' replays exactly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, &f) },
	}
	fs := cmd.Flags()
	f.scenario.register(fs)
	fs.StringVar(&f.addr, "addr", ":8000", "listen address HOST:PORT; with --per-instance, instance i listens on PORT+i")
	fs.Float64Var(&f.speed, "speed", 1, "simulated seconds per wall-clock second (> 0)")
	fs.StringVar(&f.record, "record", "", "write the arrivals as a JSONL trace to FILE, for 'servesim run --workload FILE'")
	fs.StringVar(&f.jsonl, "requests-jsonl", "", "write each served request's record (as 'servesim run --requests-jsonl') to FILE")
	fs.BoolVar(&f.perInstance, "per-instance", false, "one port per instance (a fleet behind your own router) instead of one port behind the scenario's router")
	fs.StringVar(&f.modelName, "served-model-name", "", "model name of the API (default: the scenario's model)")
	fs.IntVar(&f.maxTokens, "default-max-tokens", 0, "output length of requests without max_tokens (0: max_model_len minus the prompt, as vLLM)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this wall-clock time, e.g. 10m (0: until SIGINT or SIGTERM)")
	return cmd
}

func runServe(cmd *cobra.Command, f *serveFlags) error {
	switch {
	case !(f.speed > 0):
		return usageError{fmt.Errorf("--speed must be > 0 (got %g); it is simulated seconds per wall-clock second", f.speed)}
	case f.maxTokens < 0:
		return usageError{fmt.Errorf("--default-max-tokens must be >= 0 (got %d)", f.maxTokens)}
	case f.duration < 0:
		return usageError{fmt.Errorf("--duration must be >= 0 (got %s)", f.duration)}
	}
	s, src, err := f.scenario.load()
	if err != nil {
		return err
	}
	f.scenario.printNotes(cmd.ErrOrStderr())
	built, err := assemble.Build(s, src)
	if err != nil {
		return badInput(err)
	}
	if _, isPD := built.PD(); f.perInstance && (isPD || f.record != "") {
		return usageError{errors.New("--per-instance serves colocated instances without --record: a P/D scenario serves through its handoff on one port, and a recording replays the scenario's router, not the ports")}
	}
	host, portText, err := net.SplitHostPort(f.addr)
	if err != nil {
		return usageError{fmt.Errorf("--addr %q: %w; give HOST:PORT, e.g. :8000", f.addr, err)}
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return usageError{fmt.Errorf("--addr %q: port %q is not a number in 0..65535", f.addr, portText)}
	}
	opts := serve.Options{Config: serve.Config{Speed: f.speed}, ModelName: f.modelName, Version: version(), DefaultMaxTokens: f.maxTokens}
	if f.record != "" {
		file, err := createWriteOnly(f.record)
		if err != nil {
			return badInput(fmt.Errorf("--record: %w", err))
		}
		opts.Recorder = serve.NewRecorder(file, file)
	}
	var jsonl *metrics.JSONLWriter
	var jsonlErr error
	if f.jsonl != "" {
		file, err := createWriteOnly(f.jsonl)
		if err != nil {
			return badInput(fmt.Errorf("--requests-jsonl: %w", err))
		}
		defer file.Close()
		jsonl = metrics.NewJSONLWriter(file)
		opts.OnRecord = func(r *metrics.Record) {
			if jsonlErr == nil {
				jsonlErr = jsonl.Write(r)
			}
		}
	}
	srv, err := serve.NewServer(built, opts)
	if err != nil {
		return badInput(err)
	}
	type listener struct {
		ln       net.Listener
		instance int
	}
	var lns []listener
	closeAll := func() {
		for _, l := range lns {
			l.ln.Close()
		}
	}
	if f.perInstance {
		for i := range built.NumInstances() {
			p := port
			if p != 0 {
				p += i
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
			if err != nil {
				closeAll()
				return badInput(fmt.Errorf("instance %d: %w", i, err))
			}
			lns = append(lns, listener{ln, i})
		}
	} else {
		ln, err := net.Listen("tcp", f.addr)
		if err != nil {
			return badInput(err)
		}
		lns = append(lns, listener{ln, -1})
	}
	srv.Start()
	servers := make([]*http.Server, len(lns))
	errc := make(chan error, len(lns))
	for i, l := range lns {
		servers[i] = &http.Server{Handler: srv.Handler(l.instance), ReadHeaderTimeout: 10 * time.Second}
		what := "the cluster"
		if l.instance >= 0 {
			what = fmt.Sprintf("instance %d", l.instance)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "servesim: serving %s (%s) at http://%s at speed %g\n", what, srv.ModelName(), l.ln.Addr(), f.speed)
		go func(hs *http.Server, ln net.Listener) { errc <- hs.Serve(ln) }(servers[i], l.ln)
	}
	ctx, stop := signalContext()
	defer stop()
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	case <-srv.Driver.Done():
	}
	// The driver first: the streams still open end (their handlers
	// return), so that the servers' shutdown finds idle connections.
	simErr := srv.Driver.Stop()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, hs := range servers {
		if err := hs.Shutdown(shut); err != nil && serveErr == nil {
			serveErr = err
		}
	}
	lag := srv.Driver.Lag()
	busy := 0.0
	if lag.Elapsed > 0 {
		busy = 100 * lag.Busy.Seconds() / lag.Elapsed.Seconds()
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "servesim: stopped; driver busy %.1f %% of the time; driver lag over %d due events: p50 %d µs, p99 %d µs, p99.9 %d µs, max %d µs\n",
		busy, lag.Samples, lag.P50, lag.P99, lag.P999, lag.Max)
	if jsonl != nil && jsonlErr == nil { // the driver has stopped: no more records
		jsonlErr = jsonl.Flush()
	}
	switch {
	case simErr != nil:
		return simErr
	case jsonlErr != nil:
		return fmt.Errorf("--requests-jsonl: %w", jsonlErr)
	case serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed):
		return serveErr
	}
	return nil // SIGINT, SIGTERM or --duration: the normal ways to stop a server
}

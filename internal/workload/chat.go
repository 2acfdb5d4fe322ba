package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/des"
)

// Chat configures synthetic multi-turn conversations with token ids, so
// that prefix caching and prefix-affinity routing have real prefixes to
// hit without a hand-written trace. Each conversation is a session: turn
// k+1 is sent a think time after turn k's reply has finished, and its
// prompt is the whole history (the system prompt, every earlier message
// and reply) plus a new user message, as a chat client sends it.
type Chat struct {
	// Conversations is the number of conversations (> 0).
	Conversations int `yaml:"conversations" json:"conversations"`
	// Arrival is the process of conversation starts.
	Arrival ArrivalProcess `yaml:"arrival" json:"arrival"`
	// Turns is the distribution of turns per conversation (>= 1).
	Turns LengthDist `yaml:"turns" json:"turns"`
	// ThinkMs is the distribution of the user's think time between a
	// reply and the next message, in ms.
	ThinkMs LengthDist `yaml:"think_ms" json:"think_ms"`
	// SystemPrompts is the number of distinct system prompts shared
	// across conversations (0: none); each conversation draws one
	// uniformly.
	SystemPrompts int `yaml:"system_prompts,omitempty" json:"system_prompts,omitempty"`
	// SystemPrompt is the length distribution of the system prompts
	// (required when SystemPrompts > 0).
	SystemPrompt *LengthDist `yaml:"system_prompt,omitempty" json:"system_prompt,omitempty"`
	// Message is the length of each new user message (tokens).
	Message LengthDist `yaml:"message" json:"message"`
	// Output is the length of each reply (tokens).
	Output LengthDist `yaml:"output" json:"output"`
	// MaxContext ends a conversation before a turn whose prompt plus
	// reply would exceed this many tokens (0: no bound), as chat clients
	// stop at the model's context length.
	MaxContext int `yaml:"max_context,omitempty" json:"max_context,omitempty"`
}

// ChatPath is the config path Chat.Validate names fields under.
const ChatPath = "workload.chat"

// SharedPrefix configures single requests whose prompts start with one of
// a few shared contexts (documents for question answering, or system
// prompts) followed by a unique question, with token ids.
type SharedPrefix struct {
	// Requests is the number of requests (> 0).
	Requests int `yaml:"requests" json:"requests"`
	// Arrival is the arrival process.
	Arrival ArrivalProcess `yaml:"arrival" json:"arrival"`
	// Prefixes is the number of distinct shared contexts (> 0).
	Prefixes int `yaml:"prefixes" json:"prefixes"`
	// Prefix is the length distribution of the shared contexts.
	Prefix LengthDist `yaml:"prefix" json:"prefix"`
	// ZipfS skews the choice of context: context i (from 1) is drawn with
	// probability proportional to 1/i^s; 0 draws uniformly.
	ZipfS float64 `yaml:"zipf_s,omitempty" json:"zipf_s,omitempty"`
	// Question is the length of the unique part after the context.
	Question LengthDist `yaml:"question" json:"question"`
	// Output is the output length distribution.
	Output LengthDist `yaml:"output" json:"output"`
}

// SharedPrefixPath is the config path SharedPrefix.Validate names fields
// under.
const SharedPrefixPath = "workload.shared_prefix"

// maxGeneratedPrefixes bounds the number of distinct contexts or system
// prompts a generator holds in memory.
const maxGeneratedPrefixes = 100_000

// tokenIDRange is the range token ids are drawn from: wide enough that
// two independently drawn blocks of 16 tokens never coincide.
const tokenIDRange = 1 << 20

// maxChatConversations bounds workload.chat.conversations: counting the
// requests of the conversations a limited run never reached draws their
// lengths (Remaining), which must stay quick.
const maxChatConversations = 10_000_000

// Validate checks the config and returns every problem found, each naming
// its field path under workload.chat.
func (c Chat) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", ChatPath, field, fmt.Sprintf(format, args...)))
	}
	if c.Conversations <= 0 || c.Conversations > maxChatConversations {
		bad("conversations", "must be in [1, %d] (got %d)", maxChatConversations, c.Conversations)
	}
	errs = append(errs, c.Arrival.validate(ChatPath+".arrival")...)
	if c.Arrival.RampUp != nil {
		errs = append(errs, fmt.Errorf("%s.arrival.ramp_up: is only supported by workload.synthetic; remove it", ChatPath))
	}
	errs = append(errs, c.Turns.validate(ChatPath+".turns")...)
	errs = append(errs, c.ThinkMs.validate(ChatPath+".think_ms")...)
	errs = append(errs, c.Message.validate(ChatPath+".message")...)
	errs = append(errs, c.Output.validate(ChatPath+".output")...)
	switch {
	case c.SystemPrompts < 0 || c.SystemPrompts > maxGeneratedPrefixes:
		bad("system_prompts", "must be in [0, %d] (got %d)", maxGeneratedPrefixes, c.SystemPrompts)
	case c.SystemPrompts > 0 && c.SystemPrompt == nil:
		bad("system_prompt", "is required with system_prompts > 0 (their length distribution)")
	case c.SystemPrompts == 0 && c.SystemPrompt != nil:
		bad("system_prompt", "is set but system_prompts is 0; set system_prompts or remove it")
	case c.SystemPrompt != nil:
		errs = append(errs, c.SystemPrompt.validate(ChatPath+".system_prompt")...)
	}
	if c.MaxContext < 0 {
		bad("max_context", "must be >= 0 (got %d; 0 means no bound)", c.MaxContext)
	}
	return errors.Join(errs...)
}

// Validate checks the config and returns every problem found, each naming
// its field path under workload.shared_prefix.
func (c SharedPrefix) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", SharedPrefixPath, field, fmt.Sprintf(format, args...)))
	}
	if c.Requests <= 0 {
		bad("requests", "must be > 0 (got %d)", c.Requests)
	}
	if c.Prefixes <= 0 || c.Prefixes > maxGeneratedPrefixes {
		bad("prefixes", "must be in [1, %d] (got %d)", maxGeneratedPrefixes, c.Prefixes)
	}
	if !(c.ZipfS >= 0) || c.ZipfS > 10 {
		bad("zipf_s", "must be in [0, 10] (got %v; 0 is uniform)", c.ZipfS)
	}
	errs = append(errs, c.Arrival.validate(SharedPrefixPath+".arrival")...)
	if c.Arrival.RampUp != nil {
		errs = append(errs, fmt.Errorf("%s.arrival.ramp_up: is only supported by workload.synthetic; remove it", SharedPrefixPath))
	}
	errs = append(errs, c.Prefix.validate(SharedPrefixPath+".prefix")...)
	errs = append(errs, c.Question.validate(SharedPrefixPath+".question")...)
	errs = append(errs, c.Output.validate(SharedPrefixPath+".output")...)
	return errors.Join(errs...)
}

// Random-stream purposes of the chat and shared-prefix generators.
const (
	purposeTurns    = "chat-turns"
	purposeThink    = "chat-think"
	purposeTokens   = "token-ids"
	purposePrefixes = "shared-prefixes"
	purposeChoice   = "prefix-choice"
)

// arrivals yields arrival times in ns from a gap sampler.
type arrivals struct {
	t    int64
	gap  func() float64
	what string
}

func (a *arrivals) next() (int64, error) {
	at := a.t
	g := math.Round(a.gap() * 1e9)
	if !(g >= 0) {
		g = 0
	}
	if g >= float64(math.MaxInt64-a.t) {
		return 0, fmt.Errorf("workload: %s arrivals overflow int64 ns; raise the arrival rate", a.what)
	}
	a.t += int64(g)
	return at, nil
}

// tokens appends n random token ids to buf.
func tokens(rng *rand.Rand, buf []int32, n int) []int32 {
	for range n {
		buf = append(buf, int32(1+rng.IntN(tokenIDRange-1)))
	}
	return buf
}

// chatSource is the Source returned by NewChat.
type chatSource struct {
	cfg          Chat
	left         int
	id           int64
	arr          arrivals
	turns, think func() int
	msg, out     func() int
	ids          *rand.Rand
	system       [][]int32
	pick         *rand.Rand
	conversation int
	err          error
}

// NewChat returns a Source of cfg.Conversations conversations, generated
// one at a time on demand. The same cfg and seed give the same
// conversations; arrivals, turn counts, think times, lengths and token
// ids draw from separate streams.
func NewChat(cfg Chat, seed uint64) (Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("workload: invalid chat config: %w", err)
	}
	c := &chatSource{
		cfg:   cfg,
		left:  cfg.Conversations,
		arr:   arrivals{gap: gapSampler(cfg.Arrival, des.Stream(seed, purposeArrivals)), what: "chat"},
		turns: lengthSampler(cfg.Turns, des.Stream(seed, purposeTurns)),
		think: lengthSampler(cfg.ThinkMs, des.Stream(seed, purposeThink)),
		msg:   lengthSampler(cfg.Message, des.Stream(seed, purposeInput)),
		out:   lengthSampler(cfg.Output, des.Stream(seed, purposeOutput)),
		ids:   des.Stream(seed, purposeTokens),
		pick:  des.Stream(seed, purposeChoice),
	}
	if cfg.SystemPrompts > 0 {
		lens := lengthSampler(*cfg.SystemPrompt, des.Stream(seed, purposePrefixes))
		for range cfg.SystemPrompts {
			c.system = append(c.system, tokens(c.ids, nil, lens()))
		}
	}
	return c, nil
}

// Next implements Source: one conversation as a session.
func (c *chatSource) Next() (Entry, error) {
	if c.err != nil {
		return Entry{}, c.err
	}
	if c.left <= 0 {
		return Entry{}, io.EOF
	}
	c.left--
	at, err := c.arr.next()
	if err != nil {
		c.err = err
		return Entry{}, err
	}
	var system []int32
	if len(c.system) > 0 {
		system = c.system[c.pick.IntN(len(c.system))]
	}
	// Draw the turns' lengths first, so that the whole conversation lives
	// in one buffer: every prompt is a prefix of it and every reply a
	// slice of it, and the ids handed out are never written again.
	n := c.turns()
	msgs, outs := make([]int, 0, n), make([]int, 0, n)
	total := len(system)
	for k := range n {
		msg, out := c.msg(), c.out()
		if k > 0 && c.cfg.MaxContext > 0 && total+msg+out > c.cfg.MaxContext {
			break
		}
		msgs, outs = append(msgs, msg), append(outs, out)
		total += msg + out
	}
	buf := make([]int32, 0, total)
	buf = append(buf, system...)
	reqs := make([]Request, len(msgs))
	for k := range msgs {
		buf = tokens(c.ids, buf, msgs[k])
		prompt := len(buf)
		buf = tokens(c.ids, buf, outs[k])
		r := &reqs[k]
		r.ID, r.InputTokens, r.OutputTokens = c.id, prompt, outs[k]
		r.InputIDs, r.OutputIDs = buf[:prompt:prompt], buf[prompt:len(buf):len(buf)]
		if k == 0 {
			r.Arrival = at
		} else {
			r.Delay = int64(c.think()) * 1e6
		}
		c.id++
	}
	c.conversation++
	return Entry{Session: fmt.Sprintf("chat-%d", c.conversation-1), Requests: reqs}, nil
}

// Remaining implements Counter: the requests of the conversations not yet
// generated. A conversation's request count depends on its drawn turns and,
// under max_context, on its message and reply lengths (and its system
// prompt), so those are drawn, from their own streams as Next draws them;
// the token ids, arrivals and think times are not. The cost is a few draws
// per request, without allocation (conversations are bounded by
// maxChatConversations).
func (c *chatSource) Remaining() (int64, bool) {
	if c.err != nil {
		return 0, false
	}
	var n int64
	for ; c.left > 0; c.left-- {
		total := 0
		if len(c.system) > 0 {
			total = len(c.system[c.pick.IntN(len(c.system))])
		}
		turns := c.turns()
		for k := range turns {
			msg, out := c.msg(), c.out()
			if k > 0 && c.cfg.MaxContext > 0 && total+msg+out > c.cfg.MaxContext {
				break
			}
			total += msg + out
			n++
		}
	}
	return n, true
}

// sharedPrefixSource is the Source returned by NewSharedPrefix.
type sharedPrefixSource struct {
	one      singles // backing of plain entries
	left     int
	id       int64
	arr      arrivals
	q, out   func() int
	ids      *rand.Rand
	prefixes [][]int32
	choose   func() int
}

// NewSharedPrefix returns a Source of single requests whose prompts are a
// shared context followed by a unique question. The contexts are drawn
// once (cfg.Prefixes of them); requests are generated on demand.
func NewSharedPrefix(cfg SharedPrefix, seed uint64) (Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("workload: invalid shared_prefix config: %w", err)
	}
	s := &sharedPrefixSource{
		left: cfg.Requests,
		arr:  arrivals{gap: gapSampler(cfg.Arrival, des.Stream(seed, purposeArrivals)), what: "shared_prefix"},
		q:    lengthSampler(cfg.Question, des.Stream(seed, purposeInput)),
		out:  lengthSampler(cfg.Output, des.Stream(seed, purposeOutput)),
		ids:  des.Stream(seed, purposeTokens),
	}
	lens := lengthSampler(cfg.Prefix, des.Stream(seed, purposePrefixes))
	for range cfg.Prefixes {
		s.prefixes = append(s.prefixes, tokens(s.ids, nil, lens()))
	}
	pick := des.Stream(seed, purposeChoice)
	if cfg.ZipfS == 0 {
		s.choose = func() int { return pick.IntN(cfg.Prefixes) }
	} else {
		cdf := make([]float64, cfg.Prefixes)
		sum := 0.0
		for i := range cdf {
			sum += 1 / math.Pow(float64(i+1), cfg.ZipfS)
			cdf[i] = sum
		}
		s.choose = func() int {
			u := pick.Float64() * sum
			lo, hi := 0, len(cdf)-1
			for lo < hi {
				mid := (lo + hi) / 2
				if cdf[mid] < u {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			return lo
		}
	}
	return s, nil
}

// Next implements Source.
func (s *sharedPrefixSource) Next() (Entry, error) {
	if s.left <= 0 {
		return Entry{}, io.EOF
	}
	at, err := s.arr.next()
	if err != nil {
		s.left = 0
		return Entry{}, err
	}
	s.left--
	p := s.prefixes[s.choose()]
	q := s.q()
	ids := make([]int32, len(p), len(p)+q)
	copy(ids, p)
	ids = tokens(s.ids, ids, q)
	r := Request{ID: s.id, Arrival: at, InputTokens: len(ids), OutputTokens: s.out(), InputIDs: ids}
	s.id++
	return s.one.entry(r), nil
}

// Release implements Releaser: plain entries' storage is reused.
func (s *sharedPrefixSource) Release(e Entry) { s.one.release(e) }

// Remaining implements Counter: the requests not yet generated.
func (s *sharedPrefixSource) Remaining() (int64, bool) {
	n := int64(max(s.left, 0))
	s.left = 0
	return n, true
}

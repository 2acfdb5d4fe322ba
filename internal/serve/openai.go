package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiError is an error answered in vLLM's shape:
// {"error": {"message": ..., "type": ..., "param": ..., "code": <status>}}.
type apiError struct {
	Status  int
	Type    string
	Message string
	Param   string
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "BadRequestError", Message: fmt.Sprintf(format, args...), Param: param}
}

// errorBody is the JSON of an apiError.
type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func (e *apiError) body() errorBody {
	var p *string
	if e.Param != "" {
		p = &e.Param
	}
	return errorBody{Error: errorInfo{Message: e.Message, Type: e.Type, Param: p, Code: e.Status}}
}

// Tokenizer-free prompt counting (docs/serve.md): a text of b bytes is
// ceil(b/4) tokens, at least 1, and each token's id is a hash of its 4
// bytes, so prompts sharing a text prefix share a token-id prefix (and hit
// the prefix cache). A chat prompt is the template's tokens around each
// message: chatPerMessage tokens (role header and end of turn) plus its
// content's, then chatPrime tokens that open the assistant's turn.
const (
	bytesPerToken  = 4
	chatPerMessage = 4
	chatPrime      = 4
	vocab          = 128_000 // ids of counted text tokens stay below it
)

// textTokens appends the token ids of text to ids.
func textTokens(ids []int32, text string) []int32 {
	if text == "" {
		return ids
	}
	for i := 0; i < len(text); i += bytesPerToken {
		ids = append(ids, int32(fnv32a(text[i:min(i+bytesPerToken, len(text))])%vocab))
	}
	return ids
}

// fnv32a is the 32-bit FNV-1a hash of s.
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// roleToken is the id of a chat role's header token (above the text ids).
func roleToken(role string) int32 { return vocab + int32(fnv32a(role)%1000) }

// common are the fields of both completion endpoints that servesim reads.
type common struct {
	Model         *string `json:"model"`
	Stream        bool    `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N         *int   `json:"n"`
	MaxTokens *int64 `json:"max_tokens"`
	IgnoreEOS bool   `json:"ignore_eos"`
}

type completionRequest struct {
	common
	Prompt json.RawMessage `json:"prompt"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chatRequest struct {
	common
	Messages            []chatMessage `json:"messages"`
	MaxCompletionTokens *int64        `json:"max_completion_tokens"`
}

// parsed is a validated request.
type parsed struct {
	chat         bool
	ids          []int32
	maxTokens    int
	stream       bool
	includeUsage bool
}

// decode reads body strictly enough to answer malformed JSON with a 400.
func decode(body []byte, v any) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return badRequest("", "the request body is not valid JSON for this endpoint: %v", err)
	}
	if dec.More() {
		return badRequest("", "the request body holds more than one JSON value")
	}
	return nil
}

// limits are what requests are checked against.
type limits struct {
	model       string
	maxModelLen int // longest prompt+output an instance accepts
	maxKVTokens int // most tokens any instance's KV cache holds
	defaultMax  int // max_tokens when absent (0: max_model_len - prompt, as vLLM)
}

func (l *limits) checkCommon(c *common) *apiError {
	if c.Model != nil && *c.Model != "" && *c.Model != l.model {
		return &apiError{Status: http.StatusNotFound, Type: "NotFoundError", Param: "model",
			Message: fmt.Sprintf("The model `%s` does not exist.", *c.Model)}
	}
	if c.N != nil && *c.N != 1 {
		return badRequest("n", "n = %d is not supported: servesim returns one choice per request (n must be 1)", *c.N)
	}
	return nil
}

// finish validates the output length and the context.
func (l *limits) finish(p *parsed, maxTokens *int64, param string) *apiError {
	prompt := len(p.ids)
	if prompt == 0 {
		return badRequest("prompt", "the prompt is empty: give at least one token")
	}
	if maxTokens != nil {
		if *maxTokens < 1 {
			return badRequest(param, "%s must be at least 1, got %d.", param, *maxTokens)
		}
		if *maxTokens > int64(l.maxModelLen) {
			return l.tooLong(prompt, *maxTokens)
		}
		p.maxTokens = int(*maxTokens)
	} else if l.defaultMax > 0 {
		p.maxTokens = l.defaultMax
	} else {
		p.maxTokens = l.maxModelLen - prompt
		if p.maxTokens < 1 {
			return l.tooLong(prompt, 1)
		}
	}
	total := int64(prompt) + int64(p.maxTokens)
	if total > int64(l.maxModelLen) {
		return l.tooLong(prompt, int64(p.maxTokens))
	}
	if total > int64(l.maxKVTokens) {
		return badRequest(param, "the prompt (%d tokens) and %s (%d) need %d tokens of KV cache, but the largest instance holds %d", prompt, param, p.maxTokens, total, l.maxKVTokens)
	}
	return nil
}

func (l *limits) tooLong(prompt int, out int64) *apiError {
	return badRequest("", "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
		l.maxModelLen, int64(prompt)+out, prompt, out)
}

func (l *limits) parseCompletion(body []byte) (*parsed, *apiError) {
	var r completionRequest
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	if err := l.checkCommon(&r.common); err != nil {
		return nil, err
	}
	p := &parsed{stream: r.Stream, includeUsage: r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage}
	ids, err := promptIDs(r.Prompt)
	if err != nil {
		return nil, err
	}
	p.ids = ids
	return p, l.finish(p, r.MaxTokens, "max_tokens")
}

// promptIDs reads a completion prompt: a string, a list of token ids, or
// a list of one of either.
func promptIDs(raw json.RawMessage) ([]int32, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "prompt is missing")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return textTokens(nil, s), nil
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		out := make([]int32, len(ids))
		for i, id := range ids {
			if id < 0 || id > 1<<31-1 {
				return nil, badRequest("prompt", "token id %d at position %d is out of range", id, i)
			}
			out[i] = int32(id)
		}
		return out, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		if len(list) != 1 {
			return nil, badRequest("prompt", "a batch of %d prompts is not supported: send one prompt per request", len(list))
		}
		return promptIDs(list[0])
	}
	return nil, badRequest("prompt", "prompt must be a string, a list of token ids, or a list of one of them")
}

func (l *limits) parseChat(body []byte) (*parsed, *apiError) {
	var r chatRequest
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	if err := l.checkCommon(&r.common); err != nil {
		return nil, err
	}
	if len(r.Messages) == 0 {
		return nil, badRequest("messages", "messages is missing or empty")
	}
	p := &parsed{chat: true, stream: r.Stream, includeUsage: r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage}
	for i, m := range r.Messages {
		if m.Role == "" {
			return nil, badRequest("messages", "messages[%d].role is missing", i)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, badRequest("messages", "messages[%d].content: %v", i, err)
		}
		p.ids = append(p.ids, roleToken(m.Role), vocab+1000, vocab+1001)
		p.ids = textTokens(p.ids, text)
		p.ids = append(p.ids, vocab+1002) // end of turn
	}
	p.ids = append(p.ids, vocab+1003, roleToken("assistant"), vocab+1000, vocab+1001)
	maxTok, param := r.MaxCompletionTokens, "max_completion_tokens"
	if maxTok == nil {
		maxTok, param = r.MaxTokens, "max_tokens"
	}
	return p, l.finish(p, maxTok, param)
}

// contentText reads a message's content: a string, or a list of parts of
// which the text parts count.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("must be a string or a list of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported (text only)", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// words are the synthetic output's tokens: token k of request id is
// words[(id+k) % len(words)].
var words = [...]string{" The", " simulated", " model", " writes", " one", " word", " per", " token", ",", " and", " each", " costs", " the", " time", " of", " a", " step", "."}

func word(id int64, k int) string { return words[(int(id%int64(len(words)))+k)%len(words)] }

// Response shapes (OpenAI's, as vLLM fills them).
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
	StopReason   any     `json:"stop_reason"`
}

type chatMessageOut struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []any  `json:"tool_calls"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessageOut `json:"message,omitempty"`
	Delta        *chatDelta      `json:"delta,omitempty"`
	Logprobs     any             `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   any             `json:"stop_reason,omitempty"`
}

type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type response struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices any    `json:"choices"`
	Usage   *usage `json:"usage,omitempty"`
}

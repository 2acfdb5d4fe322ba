package engine

// FitTokens is the largest prompt-plus-output length Unfit accepts: for
// any request r, Unfit(r) == "" exactly when
// r.InputTokens+r.OutputTokens <= FitTokens(). The bound is fixed by the
// configuration (max_model_len, the KV pool's size and the speculative
// lookahead), so a caller that admits many requests can compare against it
// instead of asking Unfit each time.
func (e *Engine) FitTokens() int {
	lim := e.fitBlocks() * int(e.blockSize)
	if k := e.cfg.Spec.K; k > 0 {
		// With speculative decoding the last verification holds the last
		// token's position, its K proposals and K lookahead slots (see
		// Unfit): prompt + output - 1 + 2K tokens must fit the pool.
		lim += 1 - 2*k
	}
	if e.cfg.MaxModelLen > 0 && e.cfg.MaxModelLen < lim {
		lim = e.cfg.MaxModelLen
	}
	return lim
}

// HandoffPromptTokens is the largest prompt HandoffUnfit accepts once
// Unfit does: HandoffUnfit(r) == "" exactly when
// r.InputTokens+r.OutputTokens <= FitTokens() and
// r.InputTokens <= HandoffPromptTokens() (the prompt plus the reserved
// decode headroom fits the pool).
func (e *Engine) HandoffPromptTokens() int {
	return e.fitBlocks()*int(e.blockSize) - e.cfg.ReservedDecodeTokens
}

package metrics

// reasonTally counts failure or rejection reasons by class. A reason's
// class is its text with every number replaced by N, so that "needs 63
// blocks" and "needs 64 blocks" count together; the first reason seen of
// each class is kept as its example. Counting a reason of a class already
// seen does not allocate.
type reasonTally struct {
	byClass map[string]*reasonCount
	buf     []byte
}

type reasonCount struct {
	n       int64
	example string
}

func newReasonTally() *reasonTally {
	return &reasonTally{byClass: map[string]*reasonCount{}}
}

// add counts one reason.
func (t *reasonTally) add(reason string) {
	if reason == "" {
		reason = "unspecified"
	}
	t.buf = appendClass(t.buf[:0], reason)
	if c, ok := t.byClass[string(t.buf)]; ok {
		c.n++
		return
	}
	t.byClass[string(t.buf)] = &reasonCount{n: 1, example: reason}
}

// counts returns the counts by class.
func (t *reasonTally) counts() map[string]int64 {
	out := make(map[string]int64, len(t.byClass))
	for k, c := range t.byClass {
		out[k] = c.n
	}
	return out
}

// examples returns, per class, the first reason seen when it differs from
// the class itself (nil when none does).
func (t *reasonTally) examples() map[string]string {
	var out map[string]string
	for class, c := range t.byClass {
		if c.example != class {
			if out == nil {
				out = map[string]string{}
			}
			out[class] = c.example
		}
	}
	return out
}

// reasonClass returns the class of a reason: every number (digits, with
// an optional fraction) replaced by N.
func reasonClass(reason string) string { return string(appendClass(nil, reason)) }

func appendClass(b []byte, reason string) []byte {
	inNum := false
	for i := 0; i < len(reason); i++ {
		c := reason[i]
		digit := c >= '0' && c <= '9'
		frac := c == '.' && inNum && i+1 < len(reason) && reason[i+1] >= '0' && reason[i+1] <= '9'
		switch {
		case digit || frac:
			if !inNum {
				b = append(b, 'N')
				inNum = true
			}
		default:
			inNum = false
			b = append(b, c)
		}
	}
	return b
}

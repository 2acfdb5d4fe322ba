package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// LineError is the error of every reader in this package: one line of text
// naming the input, the 1-based line number, what is wrong and how to fix
// it, formatted "name:line: message". Err, when set, is the underlying cause
// (a JSON or I/O error) and is reachable with errors.Is / errors.As.
type LineError struct {
	Name string
	Line int
	Msg  string
	Err  error
}

// Error implements error.
func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
}

// Unwrap returns the underlying cause, if any.
func (e *LineError) Unwrap() error { return e.Err }

// lineReader yields the lines of an io.Reader one at a time with no limit
// on line length. The returned slice is only valid until the next call;
// the reader keeps nothing but one buffer as long as the longest line.
type lineReader struct {
	r    *bufio.Reader
	name string
	line int
	buf  []byte
}

func newLineReader(r io.Reader, name string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), name: name}
}

// next returns the next line with surrounding white space removed, or
// io.EOF after the last one. Blank lines are returned (empty) so callers
// can skip them; the line counter counts them.
func (l *lineReader) next() ([]byte, error) {
	chunk, err := l.r.ReadSlice('\n')
	if err == nil || (err == io.EOF && len(chunk) > 0) {
		l.line++
		return bytes.TrimSpace(chunk), nil
	}
	if err == io.EOF {
		return nil, io.EOF
	}
	l.buf = append(l.buf[:0], chunk...)
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = l.r.ReadSlice('\n')
		l.buf = append(l.buf, chunk...)
	}
	l.line++
	if err != nil && err != io.EOF {
		return nil, l.errorf(err, "read failed: %v; check that the file is readable and complete", err)
	}
	return bytes.TrimSpace(l.buf), nil
}

// errorf builds a LineError for the current line.
func (l *lineReader) errorf(cause error, format string, args ...any) *LineError {
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	return &LineError{Name: l.name, Line: l.line, Msg: msg, Err: cause}
}

// decodeStrict decodes one JSON object from line into v, rejecting unknown
// fields and trailing data. allowed lists the accepted field names for the
// error message. The returned error is a plain message (no name:line).
func decodeStrict(line []byte, v any, allowed string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err, allowed), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "extra data after the JSON object; put exactly one JSON object on each line",
			errors.New("trailing data")
	}
	if key := duplicateKey(line); key != "" {
		// encoding/json keeps the last value silently.
		return fmt.Sprintf("field %s is given twice in one object; keep one", key), errors.New("duplicate key")
	}
	return "", nil
}

// duplicateKey returns a key that appears twice in one object of the
// valid JSON line, or "". It scans the bytes once without allocating
// (keys are compared in place), so it costs little beside decoding even on
// lines of long token-id arrays.
func duplicateKey(line []byte) string {
	type key struct{ start, end int } // line[start:end] is the quoted key
	var (
		keys   [32]key // keys of the open objects, innermost last
		nkeys  int
		starts [16]int // index in keys where each open object's keys begin
		depth  int     // open objects (arrays do not count)
		stack  [64]bool
		nstack int // open containers, true for objects
	)
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '{', '[':
			if nstack == len(stack) {
				return "" // deeper than any trace line: left to the decoder
			}
			stack[nstack] = c == '{'
			nstack++
			if c == '{' {
				if depth == len(starts) {
					return ""
				}
				starts[depth] = nkeys
				depth++
			}
		case '}', ']':
			nstack--
			if c == '}' {
				depth--
				nkeys = starts[depth]
			}
		case '"':
			j := i + 1
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' {
					j++
				}
				j++
			}
			// A string directly followed (after blanks) by ':' is a key.
			k := j + 1
			for k < len(line) && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r') {
				k++
			}
			if nstack > 0 && stack[nstack-1] && k < len(line) && line[k] == ':' {
				cur := line[i : j+1]
				for _, prev := range keys[starts[depth-1]:nkeys] {
					if bytes.Equal(line[prev.start:prev.end], cur) {
						return string(cur)
					}
				}
				if nkeys == len(keys) {
					return ""
				}
				keys[nkeys] = key{i, j + 1}
				nkeys++
			}
			i = j
		}
	}
	return ""
}

// describeJSONError turns an encoding/json error into "what; how to fix".
func describeJSONError(err error, allowed string) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d: %v; each non-blank line must be one complete JSON object",
			syn.Offset, syn)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "malformed JSON: the object is cut short; each non-blank line must be one complete JSON object"
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("malformed JSON: got a JSON %s where an object was expected; each non-blank line must be one JSON object",
				typ.Value)
		}
		return fmt.Sprintf("field %s: got a JSON %s, want %s; fix the value's type",
			typ.Field, typ.Value, jsonKind(typ.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return fmt.Sprintf("unknown field %s; allowed fields: %s", field, allowed)
	default:
		return fmt.Sprintf("malformed JSON: %v; each non-blank line must be one JSON object", err)
	}
}

// jsonKind names the JSON shape expected for a Go kind.
func jsonKind(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer that fits in " + kind
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	default:
		return "a value of type " + kind
	}
}

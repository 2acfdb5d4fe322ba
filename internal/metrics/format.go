package metrics

import (
	"strconv"
	"unicode/utf8"
)

// appendMs appends ns as milliseconds with exactly three decimals
// (microsecond resolution, rounded half away from zero). It uses integer
// arithmetic only, so the bytes are exact and platform independent.
func appendMs(b []byte, ns int64) []byte {
	neg := ns < 0
	u := uint64(ns)
	if neg {
		u = uint64(-ns) // -MinInt64 wraps to itself; as uint64 it is exact
		b = append(b, '-')
	}
	us := (u + 500) / 1000
	b = strconv.AppendUint(b, us/1000, 10)
	f := us % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// appendSeconds appends a non-negative ns value as decimal seconds, exact,
// with trailing zeros trimmed but at least one decimal ("1.0", "0.25").
func appendSeconds(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	b = append(b, '.')
	f := ns % 1e9
	if f == 0 {
		return append(b, '0')
	}
	var d [9]byte
	for i := 8; i >= 0; i-- {
		d[i] = byte('0' + f%10)
		f /= 10
	}
	n := 9
	for n > 1 && d[n-1] == '0' {
		n--
	}
	return append(b, d[:n]...)
}

// appendCSVString appends s as a CSV field, quoted per RFC 4180 only when it
// contains a comma, a quote, CR or LF.
func appendCSVString(b []byte, s string) []byte {
	quote := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\n' || c == '\r' {
			quote = true
			break
		}
	}
	if !quote {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Quote, backslash and control
// characters are escaped; invalid UTF-8 becomes U+FFFD as in encoding/json.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

package errs

import (
	"strconv"
	"unicode/utf8"
)

// Clip cuts s to at most n bytes, at a character boundary, and says how
// much was left out: for a message or a log line that repeats what a
// client or a plugin sent, whatever its size.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "... (" + strconv.Itoa(len(s)-n) + " more bytes)"
}

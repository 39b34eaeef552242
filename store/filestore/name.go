package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// File names. An id is any string a user chose (a Claude Code session id,
// "user@example.com/chat 1", "../x"), so it is escaped into a stem that is
// safe in one directory on every common file system:
//
//   - a, ..., z, 0, ..., 9, '_' and '-' stand for themselves, so common ids
//     stay readable;
//   - an upper-case letter is '!' and its lower-case form (as Go's module
//     cache does), so two ids differing only in case never share a file on
//     a case-insensitive file system (macOS, Windows);
//   - any other byte is '%' and two lower-case hex digits, so '/', '\', '.',
//     NUL and non-ASCII bytes can never form a path, a hidden name or a
//     name a file system would normalise;
//   - the empty id is "%" (a '%' that escapes nothing).
//
// A stem longer than maxStem keeps its first keepPrefix bytes (cut between
// escapes, for the reader) and ends with '=' and the SHA-256 of the whole
// id, so "<stem>.json.corrupt-<nanos>" stays under the 255-byte name limit.
// Such a stem no longer gives its id back; the id inside the file still
// names it.
const (
	maxStem    = 200
	keepPrefix = 128
)

// plain reports whether b stands for itself in a stem.
func plain(b byte) bool {
	return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// stemOf returns the file name stem of id (the name without ".json").
func stemOf(id string) string {
	if id == "" {
		return "%"
	}
	if len(id) <= maxStem {
		i := 0
		for i < len(id) && plain(id[i]) {
			i++
		}
		if i == len(id) {
			return id // the common case: no copy
		}
	}
	const hexDigits = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(id) + 16)
	cut := 0 // the longest escaped prefix that fits in keepPrefix
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case plain(c):
			b.WriteByte(c)
		case 'A' <= c && c <= 'Z':
			b.WriteByte('!')
			b.WriteByte(c + ('a' - 'A'))
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
		if b.Len() <= keepPrefix {
			cut = b.Len()
		}
	}
	if b.Len() <= maxStem {
		return b.String()
	}
	sum := sha256.Sum256([]byte(id))
	return b.String()[:cut] + "=" + hex.EncodeToString(sum[:])
}

// idOf returns the id a stem stands for, and false for a hashed stem or a
// string stemOf never makes. Accepting only what stemOf makes keeps the
// mapping one to one.
func idOf(stem string) (string, bool) {
	if stem == "%" {
		return "", true
	}
	if stem == "" || len(stem) > maxStem {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(stem))
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		switch {
		case plain(c):
			b.WriteByte(c)
		case c == '!':
			if i+1 >= len(stem) || stem[i+1] < 'a' || stem[i+1] > 'z' {
				return "", false
			}
			b.WriteByte(stem[i+1] - ('a' - 'A'))
			i++
		case c == '%':
			if i+2 >= len(stem) {
				return "", false
			}
			hi, ok1 := unhex(stem[i+1])
			lo, ok2 := unhex(stem[i+2])
			d := hi<<4 | lo
			if !ok1 || !ok2 || plain(d) || 'A' <= d && d <= 'Z' {
				return "", false
			}
			b.WriteByte(d)
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unhex decodes one lower-case hex digit (stemOf writes only those).
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

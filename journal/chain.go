package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
)

// A journal line starts {"prev":"P","sum":"S", and goes on with the
// record's other fields. S is the SHA-256 of the line without its sum
// field ({"prev":"P", and the rest), so an edit anywhere in a line is found
// at that line; P is the S of the previous line of the file (empty on the
// first), so a removed or reordered line is found at the line after it.
const (
	sealHead = `{"prev":"`
	sealMid  = `","sum":"`
	sealTail = `",`
)

// seal makes the line for the record body b (a JSON object) after prev.
func seal(prev string, b []byte) []byte {
	var s sealer
	return s.seal(nil, []byte(prev), b)
}

// sealer seals lines with buffers it reuses.
type sealer struct {
	plain []byte // the line without its sum, which the sum is of
}

// seal appends to dst the line for b after prev (hex, or empty).
func (s *sealer) seal(dst, prev, b []byte) []byte {
	rest := b[1:]
	s.plain = append(append(append(append(s.plain[:0], sealHead...), prev...), sealTail...), rest...)
	sum := sha256.Sum256(s.plain)
	line := append(dst, sealHead...)
	line = append(line, prev...)
	line = append(line, sealMid...)
	line = hex.AppendEncode(line, sum[:])
	line = append(line, sealTail...)
	return append(line, rest...)
}

// sealHash is a line's sum with its seal written, its body to follow.
func sealHash(prev string) hash.Hash {
	h := sha256.New()
	h.Write([]byte(sealHead))
	h.Write([]byte(prev))
	h.Write([]byte(sealTail))
	return h
}

// unseal checks a line's own sum and returns its prev and sum.
func unseal(line []byte) (prev, sum string, err error) {
	prev, sum, body, err := parseSeal(line)
	if err != nil {
		return "", "", err
	}
	h := sealHash(prev)
	h.Write(body)
	if hex.EncodeToString(h.Sum(nil)) != sum {
		return prev, sum, errEdited
	}
	return prev, sum, nil
}

var errEdited = errors.New("the line does not match its sum: it was edited")

// parseSeal splits a line (or the start of one, at least its prev and
// sum) into its prev, its sum and the body after them.
func parseSeal(line []byte) (prev, sum string, body []byte, err error) {
	rest, ok := bytes.CutPrefix(line, []byte(sealHead))
	if !ok {
		return "", "", nil, errors.New("the line does not start with its prev and sum")
	}
	i := bytes.Index(rest, []byte(sealMid))
	if i != 0 && i != 2*sha256.Size {
		return "", "", nil, errors.New("the line's prev is not a SHA-256")
	}
	prev = string(rest[:i])
	rest = rest[i+len(sealMid):]
	if len(rest) < 2*sha256.Size+len(sealTail) || string(rest[2*sha256.Size:2*sha256.Size+len(sealTail)]) != sealTail {
		return "", "", nil, errors.New("the line's sum is not a SHA-256")
	}
	return prev, string(rest[:2*sha256.Size]), rest[2*sha256.Size+len(sealTail):], nil
}

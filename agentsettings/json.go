package agentsettings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A settings file is edited as an ordered tree whose scalars keep their
// bytes, so that keys we do not touch keep their place and their spelling
// (numbers, escapes) when the file is written back.

// maxDepth bounds the nesting of a settings file.
const maxDepth = 512

type node struct {
	kind byte // '{' object, '[' array, 's' scalar
	keys []string
	// rawKeys are the keys as the file spelt them (escapes kept), for
	// writing an object that changed.
	rawKeys [][]byte
	vals    []*node // object values, in the order of keys
	elems   []*node // array elements
	raw     []byte  // a scalar as written
	// src is the value as the file wrote it (nil for a new one); a value
	// that did not change is written back as it was, spaces included.
	src   []byte
	dirty bool
}

func object() *node { return &node{kind: '{'} }

func array(elems ...*node) *node { return &node{kind: '[', elems: elems} }

func str(s string) *node {
	b, _ := json.Marshal(s)
	return &node{kind: 's', raw: b}
}

func number(n int) *node { return &node{kind: 's', raw: []byte(fmt.Sprint(n))} }

func boolean(b bool) *node { return &node{kind: 's', raw: []byte(fmt.Sprint(b))} }

// get returns the value of key and how many times the key occurs.
func (n *node) get(key string) (*node, int) {
	var v *node
	count := 0
	for i, k := range n.keys {
		if k == key {
			v = n.vals[i]
			count++
		}
	}
	return v, count
}

// setElems replaces an array's elements.
func (n *node) setElems(elems []*node) {
	n.elems = elems
	n.dirty = true
}

// set replaces the value of key, or appends the key.
func (n *node) set(key string, v *node) {
	n.dirty = true
	for i, k := range n.keys {
		if k == key {
			n.vals[i] = v
			return
		}
	}
	kb, _ := json.Marshal(key)
	n.keys = append(n.keys, key)
	n.rawKeys = append(n.rawKeys, kb)
	n.vals = append(n.vals, v)
}

func (n *node) del(key string) {
	n.dirty = true
	for i := 0; i < len(n.keys); i++ {
		if n.keys[i] == key {
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
			n.rawKeys = append(n.rawKeys[:i], n.rawKeys[i+1:]...)
			n.vals = append(n.vals[:i], n.vals[i+1:]...)
			i--
		}
	}
}

// delAt removes the i-th key (and not another key of the same name).
func (n *node) delAt(i int) {
	n.dirty = true
	n.keys = append(n.keys[:i], n.keys[i+1:]...)
	n.rawKeys = append(n.rawKeys[:i], n.rawKeys[i+1:]...)
	n.vals = append(n.vals[:i], n.vals[i+1:]...)
}

// text returns a string scalar's value, or "" and false.
func (n *node) text() (string, bool) {
	if n == nil || n.kind != 's' || len(n.raw) == 0 || n.raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(n.raw, &s) != nil {
		return "", false
	}
	return s, true
}

// equal compares two trees as JSON values (scalars by their decoded value,
// objects as ordered key lists).
func equal(a, b *node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case 's':
		if bytes.Equal(a.raw, b.raw) {
			return true
		}
		var x, y any
		// As decoded values, of the same type: "30" is not 30.
		return json.Unmarshal(a.raw, &x) == nil && json.Unmarshal(b.raw, &y) == nil && x == y
	case '[':
		if len(a.elems) != len(b.elems) {
			return false
		}
		for i := range a.elems {
			if !equal(a.elems[i], b.elems[i]) {
				return false
			}
		}
		return true
	}
	if len(a.keys) != len(b.keys) {
		return false
	}
	for i := range a.keys {
		if a.keys[i] != b.keys[i] || !equal(a.vals[i], b.vals[i]) {
			return false
		}
	}
	return true
}

// syntaxError is a JSON error at a byte offset.
type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string { return e.msg }

// parse reads one JSON value. The input is checked by json.Valid first,
// so the parser only has to find where each value ends.
func parse(data []byte) (*node, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &syntaxError{max(int(se.Offset)-1, 0), se.Error()} // the offset is past the bad byte
		}
		return nil, &syntaxError{0, "not valid JSON"}
	}
	p := parser{data: data}
	p.space()
	return p.value(0)
}

type parser struct {
	data []byte
	i    int
}

func (p *parser) space() {
	for p.i < len(p.data) && strings.IndexByte(" \t\r\n", p.data[p.i]) >= 0 {
		p.i++
	}
}

func (p *parser) value(depth int) (*node, error) {
	start := p.i
	n, err := p.value1(depth)
	if err != nil {
		return nil, err
	}
	n.src = p.data[start:p.i]
	return n, nil
}

func (p *parser) value1(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, &syntaxError{p.i, fmt.Sprintf("nested more than %d deep", maxDepth)}
	}
	switch p.data[p.i] {
	case '{':
		n := object()
		p.i++
		p.space()
		for p.data[p.i] != '}' {
			k := p.scalar()
			var key string
			_ = json.Unmarshal(k.raw, &key)
			p.space()
			p.i++ // :
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, key)
			n.rawKeys = append(n.rawKeys, k.raw)
			n.vals = append(n.vals, v)
			p.space()
			if p.data[p.i] == ',' {
				p.i++
				p.space()
			}
		}
		p.i++
		return n, nil
	case '[':
		n := array()
		p.i++
		p.space()
		for p.data[p.i] != ']' {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
			p.space()
			if p.data[p.i] == ',' {
				p.i++
				p.space()
			}
		}
		p.i++
		return n, nil
	}
	return p.scalar(), nil
}

// scalar reads a string, number, true, false or null.
func (p *parser) scalar() *node {
	start := p.i
	if p.data[p.i] == '"' {
		p.i++
		for p.data[p.i] != '"' {
			if p.data[p.i] == '\\' {
				p.i++
			}
			p.i++
		}
		p.i++
	} else {
		for p.i < len(p.data) && strings.IndexByte(",]} \t\r\n", p.data[p.i]) < 0 {
			p.i++
		}
	}
	return &node{kind: 's', raw: p.data[start:p.i]}
}

// encode writes the tree: what changed with indent per level (none: on
// one line), the way JSON.stringify does, each line ended by eol, and
// what did not as it was.
func encode(n *node, indent, eol string) []byte {
	var b bytes.Buffer
	changed(n)
	writeNode(&b, n, indent, eol, 0)
	return b.Bytes()
}

// changed marks the values that changed or hold one that did.
func changed(n *node) bool {
	d := n.dirty || n.src == nil
	for _, c := range n.vals {
		d = changed(c) || d
	}
	for _, c := range n.elems {
		d = changed(c) || d
	}
	n.dirty = d
	return d
}

func writeNode(b *bytes.Buffer, n *node, indent, eol string, level int) {
	if !n.dirty {
		b.Write(n.src)
		return
	}
	newline := func(l int) {
		if indent != "" {
			b.WriteString(eol)
			b.WriteString(strings.Repeat(indent, l))
		}
	}
	colon := ":"
	if indent != "" {
		colon = ": "
	}
	switch n.kind {
	case 's':
		b.Write(n.raw)
	case '[':
		if len(n.elems) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(level + 1)
			writeNode(b, e, indent, eol, level+1)
		}
		newline(level)
		b.WriteByte(']')
	case '{':
		if len(n.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(level + 1)
			b.Write(n.rawKeys[i])
			b.WriteString(colon)
			writeNode(b, n.vals[i], indent, eol, level+1)
		}
		newline(level)
		b.WriteByte('}')
	}
}

// eolOf is how a file ends its lines: "\r\n" when its first line ends
// so (a file written on Windows), else "\n".
func eolOf(data []byte) string {
	if nl := bytes.IndexByte(data, '\n'); nl > 0 && data[nl-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// indentOf guesses a file's indentation: the white space that starts its
// second line, or "" for a file on one line. A file without one (new or
// empty) gets two spaces, as Claude Code writes it.
func indentOf(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "  "
	}
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return ""
	}
	rest := data[nl+1:]
	j := 0
	for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t') {
		j++
	}
	if j == 0 {
		return "  "
	}
	return string(rest[:j])
}

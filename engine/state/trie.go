package state

import "unsafe"

// The values of a store live in a persistent trie indexed by key index: a
// snapshot is one pointer, and a commit copies only the path to each key it
// touches (depth is log8 of the number of keys: 1 up to 8 keys, 2 up to 64,
// 6 up to 262,144). Registries are frozen, so the depth is fixed per registry.
//
// Nodes are narrow and inner nodes hold bare pointers: the bytes a commit
// allocates, not the depth, decide how the cost grows with the state's size.

const (
	bits  = 3
	width = 1 << bits
	mask  = width - 1
)

// inner holds *inner children, or *leaf children on the level above the
// leaves; the level says which.
type inner [width]unsafe.Pointer

// leaf holds values (nil means absent) and the lengths of their JSON
// encodings, kept so a commit measures only the values it touches (see
// Limits; a size fits in 32 bits, as max_state_size is at most 1 GiB).
type leaf struct {
	v [width]any
	n [width]int32
}

// slot is one key's value and its encoded size.
type slot struct {
	v any
	n int
}

func depthFor(n int) int {
	d := 1
	for c := width; c < n; c *= width {
		d++
	}
	return d
}

// root is the top node: a *leaf when depth is 1, else an *inner.
func get(root unsafe.Pointer, depth, i int) slot {
	n := root
	for level := depth - 1; level > 0 && n != nil; level-- {
		n = (*inner)(n)[(i>>(bits*level))&mask]
	}
	if n == nil {
		return slot{}
	}
	l := (*leaf)(n)
	return slot{l.v[i&mask], int(l.n[i&mask])}
}

// fresh lists the nodes one commit allocated: they are not shared with any
// snapshot yet, so later updates of the same commit write them in place. It
// is passed by value so a commit's small buffer stays on the stack.
type fresh []unsafe.Pointer

func (f fresh) has(n unsafe.Pointer) bool {
	for _, x := range f {
		if x == n {
			return true
		}
	}
	return false
}

// set returns a new root with slot i holding v (a nil value removes it),
// and the nodes allocated so far. track is false when the commit touches
// one key.
func set(root unsafe.Pointer, depth, i int, v slot, f fresh, track bool) (unsafe.Pointer, fresh) {
	if depth == 1 {
		var l *leaf
		l, f = ownLeaf(root, f, track)
		l.v[i&mask], l.n[i&mask] = v.v, int32(v.n)
		return unsafe.Pointer(l), f
	}
	top, f := ownInner(root, f, track)
	n := top
	for level := depth - 1; level > 1; level-- {
		slot := (i >> (bits * level)) & mask
		var child *inner
		child, f = ownInner(n[slot], f, track)
		n[slot] = unsafe.Pointer(child)
		n = child
	}
	slot := (i >> bits) & mask
	l, f := ownLeaf(n[slot], f, track)
	n[slot] = unsafe.Pointer(l)
	l.v[i&mask], l.n[i&mask] = v.v, int32(v.n)
	return unsafe.Pointer(top), f
}

func ownInner(p unsafe.Pointer, f fresh, track bool) (*inner, fresh) {
	if p != nil && f.has(p) {
		return (*inner)(p), f
	}
	c := new(inner)
	if p != nil {
		*c = *(*inner)(p)
	}
	if track {
		f = append(f, unsafe.Pointer(c))
	}
	return c, f
}

func ownLeaf(p unsafe.Pointer, f fresh, track bool) (*leaf, fresh) {
	if p != nil && f.has(p) {
		return (*leaf)(p), f
	}
	c := new(leaf)
	if p != nil {
		*c = *(*leaf)(p)
	}
	if track {
		f = append(f, unsafe.Pointer(c))
	}
	return c, f
}

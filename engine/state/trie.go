package state

// The values of a store live in a persistent trie indexed by key index: a
// snapshot is one pointer, and a commit copies only the path to each key it
// touches (depth is log16 of the number of keys: 1 up to 16 keys, 5 up to a
// million). Registries are frozen, so the depth is fixed per registry.
//
// Narrow nodes keep the bytes a commit allocates small, which matters more
// than depth: with a large live state, the garbage collector's cost per
// commit grows with the bytes each commit allocates.

const (
	bits  = 4
	width = 1 << bits
	mask  = width - 1
)

// node is an inner node (slots hold *node) or a leaf (slots hold values,
// nil meaning absent). One type keeps each path copy to one allocation.
type node [width]any

func depthFor(n int) int {
	d := 1
	for c := width; c < n; c *= width {
		d++
	}
	return d
}

func get(root *node, depth, i int) any {
	n := root
	for level := depth - 1; level > 0; level-- {
		if n == nil {
			return nil
		}
		child, _ := n[(i>>(bits*level))&mask].(*node)
		n = child
	}
	if n == nil {
		return nil
	}
	return n[i&mask]
}

// fresh lists the nodes one commit allocated: they are not shared with any
// snapshot yet, so later updates of the same commit write them in place.
type fresh []*node

func (f fresh) has(n *node) bool {
	for _, x := range f {
		if x == n {
			return true
		}
	}
	return false
}

// set returns a new root with slot i holding v (nil removes it).
func set(root *node, depth, i int, v any, fresh *fresh) *node {
	n := own(root, fresh)
	top := n
	for level := depth - 1; level > 0; level-- {
		slot := (i >> (bits * level)) & mask
		child, _ := n[slot].(*node)
		child = own(child, fresh)
		n[slot] = child
		n = child
	}
	n[i&mask] = v
	return top
}

func own(n *node, f *fresh) *node {
	if n != nil && f.has(n) {
		return n
	}
	c := new(node)
	if n != nil {
		*c = *n
	}
	*f = append(*f, c)
	return c
}

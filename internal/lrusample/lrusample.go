// Package lrusample picks what to evict from a map the way Redis does:
// the least recently used of a few entries sampled at random (Go's map
// iteration starts at a random place). It costs O(1) per eviction where an
// exact order would cost a list kept in step with every use.
package lrusample

// Size is how many entries a sample holds: Redis's default, close enough
// to exact least-recently-used for eviction and cheap (each sampled entry
// is a cache miss on its last-use time).
const Size = 5

// Entry is a sampled entry of a map, with the time used gave it.
type Entry[K comparable, V any] struct {
	Key K
	Val V
	at  int64
}

// Oldest fills buf with up to Size entries of m, least recently used first
// by used, and returns them; an entry for which used reports false may not
// go and is not sampled. The caller holds whatever guards m.
func Oldest[K comparable, V any](m map[K]V, used func(K, V) (at int64, ok bool), buf *[Size]Entry[K, V]) []Entry[K, V] {
	n := 0
	for k, v := range m {
		at, ok := used(k, v)
		if !ok {
			continue
		}
		i := n
		for ; i > 0 && buf[i-1].at > at; i-- {
			buf[i] = buf[i-1]
		}
		buf[i] = Entry[K, V]{Key: k, Val: v, at: at}
		if n++; n == Size {
			break
		}
	}
	return buf[:n]
}

// Package lrusample picks what to evict from a map the way Redis does:
// the least recently used of a few entries sampled at random (Go's map
// iteration starts at a random place). It costs O(1) per eviction where an
// exact order would cost a list kept in step with every use.
package lrusample

// Size is how many entries a sample holds: Redis's default, close enough
// to exact least-recently-used for eviction and cheap (each sampled entry
// is a cache miss on its last-use time).
const Size = 5

// Oldest fills buf with up to Size values of m other than skip, least
// recently used first by used, and returns them. The caller holds
// whatever guards m.
func Oldest[K comparable, V comparable](m map[K]V, skip V, used func(V) int64, buf *[Size]V) []V {
	n := 0
	for _, v := range m {
		if v == skip {
			continue
		}
		at := used(v)
		i := n
		for ; i > 0 && used(buf[i-1]) > at; i-- {
			buf[i] = buf[i-1]
		}
		buf[i] = v
		if n++; n == Size {
			break
		}
	}
	return buf[:n]
}

// OldestKey is the key of the least recently used of up to Size entries
// of m sampled, by used; an entry for which used reports false is not
// sampled (it may not go). ok is false when no entry was sampled. The
// caller holds whatever guards m.
func OldestKey[K comparable, V any](m map[K]V, used func(K, V) (at int64, ok bool)) (key K, ok bool) {
	var oldest int64
	n := 0
	for k, v := range m {
		at, can := used(k, v)
		if !can {
			continue
		}
		if n == 0 || at < oldest {
			key, oldest = k, at
		}
		if n++; n == Size {
			break
		}
	}
	return key, n > 0
}

package schema

import "strings"

// suggest returns the candidate closest to name, or "" when none is close
// enough to be a likely typo. Case, '_' and '-' are ignored first, so
// "additional_properties" finds "additionalProperties".
func suggest(name string, candidates []string) string {
	const maxLen = 64 // longer names are not typos worth the work
	if len(name) > maxLen {
		return ""
	}
	fn := fold(name)
	best, bestD := "", -1
	for _, c := range candidates {
		if len(c) > maxLen || c == name {
			continue
		}
		fc := fold(c)
		if fc == fn {
			return c
		}
		d := distance(fn, fc)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	// About one edit in three characters; a name of one or two characters
	// is too short to call anything its typo.
	n := len([]rune(fn))
	limit := max(1, n/3)
	if n < 3 {
		limit = 0
	}
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// distance is the optimal string alignment distance: Levenshtein plus
// swapping two neighbours, the commonest typo.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] in three rolling rows.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

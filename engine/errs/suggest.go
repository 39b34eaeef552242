package errs

// Suggest returns the candidate closest to name when it is close enough to be
// a likely typo, or "". Messages use it for "did you mean".
func Suggest(name string, candidates []string) string {
	// A third of the name, at least one edit: close enough for a typo
	// ("plugns", "defualt"), far enough that "redact" does not suggest
	// "budget".
	best, bestD := "", max(1, len(name)/3)+1
	for _, c := range candidates {
		if d := distance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == name {
		return ""
	}
	return best
}

// DidYouMean renders Suggest's answer as ` (did you mean "x"?)` or "".
func DidYouMean(name string, candidates []string) string {
	if s := Suggest(name, candidates); s != "" {
		return ` (did you mean "` + s + `"?)`
	}
	return ""
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

package errs

// Suggest returns the candidate closest to name when it is close enough to be
// a likely typo, or "". Messages use it for "did you mean".
func Suggest(name string, candidates []string) string {
	// A third of the name, at least one edit: close enough for a typo
	// ("plugns", "defualt"), far enough that "redact" does not suggest
	// "budget".
	best, bestD := "", max(1, len(name)/3)+1
	for _, c := range candidates {
		// The distance is at least the difference in length: a name far
		// longer than every candidate (a client's megabyte) costs nothing.
		if len(name)-len(c) >= bestD || len(c)-len(name) >= bestD {
			continue
		}
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

// distance is the optimal-string-alignment distance between a and b, in
// bytes: Levenshtein with a swap of two neighbours counting as one edit, the
// commonest typo ("modle", "defualt").
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

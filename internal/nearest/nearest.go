// Package nearest finds the known names closest to a misspelt one, for
// "did you mean" hints in error messages.
package nearest

import (
	"slices"
	"strings"
)

// Distance is the Levenshtein edit distance between a and b in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Closest returns up to n candidates in order of increasing dist, ties in
// case-insensitive name order.
func Closest(candidates []string, dist func(candidate string) int, n int) []string {
	type scored struct {
		name string
		dist int
	}
	all := make([]scored, 0, len(candidates))
	for _, c := range candidates {
		all = append(all, scored{c, dist(c)})
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(strings.ToLower(a.name), strings.ToLower(b.name))
	})
	n = min(max(n, 0), len(all))
	out := make([]string, 0, n)
	for _, s := range all[:n] {
		out = append(out, s.name)
	}
	return out
}

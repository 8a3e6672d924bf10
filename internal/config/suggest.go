package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// suggestKey finds what an unknown key in table was probably meant to be:
// one of keys, else, at the top level or in a top-level table, the same
// key in another table: "include" under [watch].
func suggestKey(word string, table []string, keys []string) string {
	if s := Suggest(word, keys); s != "" {
		return strconv.Quote(s)
	}
	if len(table) > 1 {
		return ""
	}
	key, score := "", -1
	var where []string
	for _, t := range tableNames {
		if len(table) == 1 && t == table[0] {
			continue
		}
		s, sc := bestMatch(word, keysOf(t, false))
		switch {
		case s == "":
		case score < 0 || sc < score:
			key, score, where = s, sc, []string{"[" + t + "]"}
		case sc == score && s == key:
			where = append(where, "["+t+"]")
		}
	}
	if key == "" {
		return ""
	}
	return fmt.Sprintf("%q under %s", key, strings.Join(where, " or "))
}

// Suggest returns the candidate word was most probably meant to be, or ""
// (also when word is one): a few typed characters apart ("server.py" for
// "sever.py"), or holding it as whole '_'-separated words or as a prefix
// ("timeout" for "stop_timeout", "warn" for "warning"), or the reverse.
func Suggest(word string, candidates []string) string {
	s, _ := bestMatch(word, candidates)
	if s == word {
		return ""
	}
	return s
}

// bestMatch is Suggest with the score of its answer: the edit distance, or
// a score past every accepted distance for a containment match. Unlike
// Suggest it returns word itself when it is a candidate.
func bestMatch(word string, candidates []string) (string, int) {
	if slices.Contains(candidates, word) {
		return word, 0
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	w := norm(word)
	limit := min(max(1, utf8.RuneCountInString(w)/3), 3)
	best, bestScore := "", limit+2
	for _, c := range candidates {
		n := norm(c)
		score := editDistance(w, n)
		if score > limit {
			score = limit + 2
			if len(w) >= 3 && len(n) >= 3 && (containsWords(n, w) || containsWords(w, n) ||
				strings.HasPrefix(n, w) || strings.HasPrefix(w, n)) {
				score = limit + 1
			}
		}
		if score < bestScore {
			best, bestScore = c, score
		}
	}
	return best, bestScore
}

// containsWords reports whether s contains sub at '_' boundaries.
func containsWords(s, sub string) bool {
	return strings.Contains("_"+s+"_", "_"+sub+"_")
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

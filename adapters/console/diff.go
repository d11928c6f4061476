package console

import "strings"

// diffLine is one line of a line diff: Op is ' ' (in both), '-' (only in the first) or '+' (only in the second).
type diffLine struct {
	Op   string
	Text string
}

// maxDiffLines bounds each side of a diff: the table it fills is len(a) by len(b). A preset version is a system
// prompt and a configuration: far shorter than this.
const maxDiffLines = 2000

// lineDiff is the shortest edit from a to b, line by line (the longest common subsequence of their lines). Past
// maxDiffLines lines on a side, the rest of both is shown as removed and added.
func lineDiff(a, b string) []diffLine {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var tail []diffLine
	if len(al) > maxDiffLines || len(bl) > maxDiffLines {
		for _, l := range al[min(len(al), maxDiffLines):] {
			tail = append(tail, diffLine{"-", l})
		}
		for _, l := range bl[min(len(bl), maxDiffLines):] {
			tail = append(tail, diffLine{"+", l})
		}
		al, bl = al[:min(len(al), maxDiffLines)], bl[:min(len(bl), maxDiffLines)]
	}
	// lcs[i][j] is the length of the longest common subsequence of al[i:] and bl[j:].
	lcs := make([][]int, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(al) && j < len(bl) {
		switch {
		case al[i] == bl[j]:
			out = append(out, diffLine{" ", al[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", al[i]})
			i++
		default:
			out = append(out, diffLine{"+", bl[j]})
			j++
		}
	}
	for ; i < len(al); i++ {
		out = append(out, diffLine{"-", al[i]})
	}
	for ; j < len(bl); j++ {
		out = append(out, diffLine{"+", bl[j]})
	}
	return append(out, tail...)
}

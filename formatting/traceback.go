package formatting

import "strings"

// SnippetFile is the file name the executor compiles the user's code under;
// traceback frames in it are the user's.
const SnippetFile = "<snippet>"

const tracebackHeader = "Traceback (most recent call last):"

// trimGuardFrames drops, in each traceback of stderr, the runner's own
// frames: the frames before the first frame of the user's code (the guard
// that execs the snippet), and frames from those same files deeper in the
// stack (a guarded function the snippet called). Frames of other files the
// user's code called into stay. A traceback without a frame of the snippet
// is kept whole.
func trimGuardFrames(stderr string) string {
	if !strings.Contains(stderr, tracebackHeader) {
		return stderr
	}
	lines := strings.Split(stderr, "\n")
	kept := keptLines(lines)
	out := make([]string, len(kept))
	for k, i := range kept {
		out[k] = lines[i]
	}
	return strings.Join(out, "\n")
}

// keptLines returns the indexes of the lines of stderr that trimGuardFrames
// keeps, in order.
func keptLines(lines []string) []int {
	out := make([]int, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		out = append(out, i)
		if strings.TrimSpace(lines[i]) != tracebackHeader {
			continue
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		var frames [][]int // each frame: its File line and the lines below it
		j := i + 1
		for ; j < len(lines) && strings.HasPrefix(lines[j], indent+"  "); j++ {
			if _, ok := frameFile(lines[j], indent); ok || len(frames) == 0 {
				frames = append(frames, nil)
			}
			frames[len(frames)-1] = append(frames[len(frames)-1], j)
		}
		out = append(out, userFrames(lines, frames, indent)...)
		i = j - 1
	}
	return out
}

// userFrames drops the runner's frames, keeping all when none is the
// snippet's.
func userFrames(lines []string, frames [][]int, indent string) []int {
	first := -1
	for k, f := range frames {
		if file, _ := frameFile(lines[f[0]], indent); file == SnippetFile {
			first = k
			break
		}
	}
	var kept []int
	if first < 0 {
		for _, f := range frames {
			kept = append(kept, f...)
		}
		return kept
	}
	guard := map[string]bool{}
	for _, f := range frames[:first] {
		if file, ok := frameFile(lines[f[0]], indent); ok {
			guard[file] = true
		}
	}
	for _, f := range frames[first:] {
		if file, ok := frameFile(lines[f[0]], indent); !ok || !guard[file] {
			kept = append(kept, f...)
		}
	}
	return kept
}

// frameFile returns the file named by a traceback line
// `  File "name", line 3, in f`.
func frameFile(line, indent string) (string, bool) {
	rest, ok := strings.CutPrefix(line, indent+`  File "`)
	if !ok {
		return "", false
	}
	file, _, ok := strings.Cut(rest, `", line `)
	return file, ok
}

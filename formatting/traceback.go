package formatting

import "strings"

// SnippetFile is the file name the executor compiles the user's code under;
// traceback frames in it are the user's.
const SnippetFile = "<snippet>"

const tracebackHeader = "Traceback (most recent call last):"

// trimGuardFrames drops, in each traceback of stderr, the frames before the
// first frame of the user's code: those are the runner's own (the guard
// that execs the snippet). Frames the user's code called into, deeper in
// the stack, stay. A traceback without a frame of the snippet is kept whole.
func trimGuardFrames(stderr string) string {
	if !strings.Contains(stderr, tracebackHeader) {
		return stderr
	}
	lines := strings.Split(stderr, "\n")
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		if strings.TrimSpace(lines[i]) != tracebackHeader {
			continue
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		j := i + 1
		first := -1
		for j < len(lines) && strings.HasPrefix(lines[j], indent+"  ") {
			if first < 0 && strings.HasPrefix(lines[j], indent+`  File "`+SnippetFile+`"`) {
				first = j
			}
			j++
		}
		if first < 0 {
			first = i + 1
		}
		out = append(out, lines[first:j]...)
		i = j - 1
	}
	return strings.Join(out, "\n")
}

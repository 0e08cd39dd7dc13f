package stage

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
)

// CollectDepth bounds how deep the collector reads files in the work dir;
// those deeper are named with executor.OmitTooDeep.
const CollectDepth = 16

// scratch reports whether a work dir name stays behind (see policy).
func scratch(name string) bool {
	return slices.ContainsFunc(policy.ScratchPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// candidate is a regular file found in the work dir, not yet read.
type candidate struct {
	path  string // as it comes back (see shownNames)
	raw   string // as it is named in the work dir
	size  int64
	mtime int64 // ns
}

// shownNames gives each of the names of one directory the name it comes
// back under: itself where it is UTF-8, else with each invalid byte
// written \xNN (a path is a JSON string, which would turn every invalid
// byte into U+FFFD, and two names into one). A name that then equals
// another gets "~2" (or the next free number) appended, so every path
// that comes back is unique, and a UTF-8 name is always itself.
func shownNames(names []string) map[string]string {
	shown := make(map[string]string, len(names))
	taken := make(map[string]bool, len(names))
	for _, name := range names {
		if utf8.ValidString(name) {
			shown[name], taken[name] = name, true
		}
	}
	for _, name := range names {
		if _, ok := shown[name]; ok {
			continue
		}
		s := EscapeInvalid(name)
		for n := 2; taken[s]; n++ {
			s = EscapeInvalid(name) + "~" + strconv.Itoa(n)
		}
		shown[name], taken[s] = s, true
	}
	return shown
}

// EscapeInvalid writes each byte of s that is not part of UTF-8 as \xNN.
func EscapeInvalid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// byAppearance orders files as they appeared: by modification time, then
// by name.
func byAppearance(a, b candidate) int {
	return cmp.Or(cmp.Compare(a.mtime, b.mtime), strings.Compare(a.path, b.path))
}

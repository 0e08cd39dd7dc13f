package formatting

import (
	"regexp"
	"strings"
	"sync"
)

// pythonish reports tags that mean Python: the Python tags, the REPL tags,
// versioned names (python3.12, py3.11, python2) and one-letter typos of
// "python" (pyhton, pyton, pythn) that are not another language's name.
func pythonish(tag string) bool {
	if pythonTags[tag] {
		return true
	}
	base := strings.TrimRight(tag, "0123456789.")
	if base != tag && (base == "python" || base == "py") {
		return true
	}
	return len(base) >= 5 && !otherTags[tag] && oneEdit(base, "python")
}

// oneEdit reports whether a and b differ by at most one insertion, deletion,
// substitution or transposition of adjacent letters.
func oneEdit(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	switch len(b) - len(a) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if a[i+1:] == b[i+1:] {
			return true
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
}

// isTag reports a word that names a language or stdin.
func isTag(tag string) bool {
	return knownTag(tag) || pythonish(tag)
}

// hiddenLanguage reports a first line Discord takes as the block's
// language and hides: letters, digits and _ + - . # only.
func hiddenLanguage(line string) bool {
	if line == "" {
		return false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+-.#", c) >= 0) {
			return false
		}
	}
	return true
}

// attributes matches the attributes of an info string: words, key=value
// pairs (values bare or quoted) and {…} groups, as in ```python
// showLineNumbers, ```python title="fib.py" hl_lines="1 3".
var attributes = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:\s*(?:[A-Za-z0-9_][\w.-]*(?:=(?:"[^"]*"|'[^']*'|[^\s"']+))?|\{[^}]*\}))+\s*$`)
})

// statementWords start a Python statement: after a tag they are code
// written on the fence line, not attributes.
var statementWords = map[string]bool{
	"import": true, "from": true, "def": true, "class": true, "return": true, "print": true,
	"del": true, "pass": true, "raise": true, "assert": true, "global": true, "nonlocal": true,
	"while": true, "with": true, "try": true, "async": true, "await": true, "yield": true,
	"lambda": true, "break": true, "continue": true, "match": true, "type": true,
}

// infoTag reads the language of a first line that is an info string with
// attributes: the first word, up to a space, ':' or '{', when it names a
// language (```python title="fib.py", ```python:src/app.py,
// ```py {linenos=true}, ```python showLineNumbers). When what follows the
// word is code rather than attributes (```py print(1)), it is returned as
// code, as in a one-line block. A line that reads as Python (c = 1,
// r: float = 0.5, d [0], c in xs) is not an info string.
func infoTag(line string) (tag, code string, ok bool) {
	i := strings.IndexAny(line, " \t:{")
	if i <= 0 {
		return "", "", false
	}
	tag = strings.ToLower(line[:i])
	if !isTag(tag) {
		return "", "", false
	}
	rest := line[i:]
	switch rest[0] {
	case '{':
		return tag, "", true
	case ':':
		after := rest[1:]
		if after == "" || after[0] == ' ' || after[0] == '\t' {
			return "", "", false // an annotation: c: int = 1
		}
		if pythonish(tag) || strings.IndexFunc(after, func(r rune) bool { return !pathRune(r) }) < 0 {
			return tag, "", true
		}
		return "", "", false
	}
	rest = strings.TrimSpace(rest)
	if startsWithOperator(rest) || strings.ContainsRune("([", rune(rest[0])) {
		return "", "", false
	}
	word, _, _ := strings.Cut(rest, " ")
	switch word {
	case "and", "or", "in", "is", "not", "if", "else", "for", "as":
		return "", "", false
	}
	if attributes().MatchString(rest) && !statementWords[word] {
		return tag, "", true
	}
	return tag, rest, true
}

func pathRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/\\", r)
}

// prefixTag reads a language word on the line before the first fence:
// "!run js" (the adapter strips the trigger, leaving "js"), "<@U1> py",
// "/run python". The word must name a language; a first word that starts
// with a sign or a mention is the trigger.
func prefixTag(prefix string) string {
	f := strings.Fields(prefix)
	switch {
	case len(f) == 2 && !wordRune(rune(f[0][0])):
	case len(f) == 1:
	default:
		return ""
	}
	if tag := strings.ToLower(f[len(f)-1]); isTag(tag) {
		return tag
	}
	return ""
}

func wordRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r >= 0x80
}

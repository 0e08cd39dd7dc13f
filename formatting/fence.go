package formatting

// Fences follows a message that grows line by line (a console reading its
// input) and tells whether the text so far ends inside a code block that
// Extract would see as unclosed, so that a blank line there belongs to the
// code and does not end the message. The zero value is ready; each call
// scans only what earlier calls have not settled, so following a message
// costs time linear in its length.
type Fences struct {
	pos int // the text before pos is settled: outside any open block

	open     bool
	n        int  // length of the open block's fence
	tilde    bool // the open block's fence is made of tildes
	searched int  // the open block's closer is not before this offset
}

// Open reports whether text ends inside an unclosed code block. text must
// extend the text of the previous call and end at a line end (the newline
// itself not included).
func (f *Fences) Open(text string) bool {
	for {
		if !f.open {
			o := openers{text: text}
			start, n, tilde := o.next(f.pos)
			if start < 0 {
				return false
			}
			f.open, f.n, f.tilde, f.searched = true, n, tilde, start+n
		}
		var end, next int
		if f.tilde {
			end, next = tildeCloser(text, f.searched, f.n)
		} else {
			end, next = backtickCloser(text, f.searched, f.n)
		}
		if end == len(text) {
			// Unclosed: the next call's text goes on with a newline here,
			// so the next search for the closer starts there.
			f.searched = len(text)
			return true
		}
		f.open, f.pos = false, next
	}
}

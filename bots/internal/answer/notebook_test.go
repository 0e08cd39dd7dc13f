package answer

import (
	"testing"

	"github.com/runblock/runblock/formatting"
)

// TestNotebookStaysBounded: past its bounds the record drops the least
// recently used threads with their keys and bytes, also one that a cell
// was still being recorded into.
func TestNotebookStaysBounded(t *testing.T) {
	nb := newNotebook[msg]()
	nb.maxThreads = 2
	c := func(key string) cell[msg] {
		return cell[msg]{key: key, user: "u", ex: formatting.Extraction{Code: "x=1"}, ok: true}
	}
	a := nb.open("a")
	nb.put(a, 0, c("a1"))
	nb.replied(a, "ra1")
	b := nb.open("b")
	nb.put(b, 0, c("b1"))
	nb.open("c") // a goes
	if nb.sessionOf("a1") != "" || nb.sessionOf("ra1") != "" || nb.order.Len() != 2 {
		t.Fatalf("a is still recorded: %d threads, a1 in %q", nb.order.Len(), nb.sessionOf("a1"))
	}
	// A cell of a that was running while a went is not recorded.
	nb.put(a, 1, c("a2"))
	nb.replied(a, "ra2")
	if nb.sessionOf("a2") != "" || nb.sessionOf("ra2") != "" {
		t.Fatal("a cell of a dropped thread is recorded")
	}
	if want := c("b1").size(); nb.bytes != want || len(nb.keys) != 1 {
		t.Fatalf("%d bytes and %d keys recorded, want %d and 1", nb.bytes, len(nb.keys), want)
	}
	nb.maxBytes = 1
	nb.put(nb.open("c"), 0, c("c1")) // b goes for the bytes
	if nb.sessionOf("b1") != "" || nb.bytes != c("c1").size() {
		t.Fatalf("b is still recorded: %d bytes", nb.bytes)
	}
}

package sandbox

import (
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// outputBudget is the hard cap on what one run may write to stdout and
// stderr together. Passing it closes exceeded once; the run is then stopped.
type outputBudget struct {
	limit    int64
	total    atomic.Int64
	once     sync.Once
	exceeded chan struct{}
}

func newOutputBudget(limit int64) *outputBudget {
	return &outputBudget{limit: limit, exceeded: make(chan struct{})}
}

func (b *outputBudget) add(n int) {
	if b.total.Add(int64(n)) > b.limit {
		b.once.Do(func() { close(b.exceeded) })
	}
}

// capture drains one stream, keeping its first keep bytes and counting the
// rest, so a flood costs the service a fixed amount of memory. Each time
// the kept bytes grow it signals grew (without waiting: one pending signal
// stands for any number), for the run's live output.
type capture struct {
	keep   int
	budget *outputBudget
	grew   chan<- struct{}
	mu     sync.Mutex // guards buf while the drain runs
	buf    []byte
	n      int64
	done   chan struct{}
}

func startCapture(r io.Reader, keep int64, budget *outputBudget, grew chan<- struct{}) *capture {
	c := &capture{keep: int(keep), budget: budget, grew: grew, done: make(chan struct{})}
	go c.drain(r)
	return c
}

// chunks are the captures' read buffers, borrowed for a drain: a run's
// two of its own were most of what it left the service's collector (64
// of 81 KiB in BenchmarkHello).
var chunks = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (c *capture) drain(r io.Reader) {
	defer close(c.done)
	chunk := chunks.Get().(*[32 << 10]byte)
	defer chunks.Put(chunk) // before done: nothing reads it then
	for {
		n, err := r.Read(chunk[:])
		if n > 0 {
			c.n += int64(n)
			if room := c.keep - len(c.buf); room > 0 {
				c.mu.Lock()
				c.buf = append(c.buf, chunk[:min(n, room)]...)
				c.mu.Unlock()
				select {
				case c.grew <- struct{}{}:
				default:
				}
			}
			c.budget.add(n)
		}
		if err != nil {
			return
		}
	}
}

// text returns what was kept as valid UTF-8, and whether it is only a
// prefix. Call it after done is closed.
func (c *capture) text() (string, bool) {
	truncated := c.n > int64(len(c.buf))
	return validText(c.buf, truncated), truncated
}

// sofar returns what was kept so far, while the drain may still run, up to
// its last whole character.
func (c *capture) sofar() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return validText(c.buf, true)
}

// validText returns b as valid UTF-8; cut: b may end in half a character,
// which is left out.
func validText(b []byte, cut bool) string {
	if cut {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

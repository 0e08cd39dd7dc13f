package answer

import (
	"container/list"
	"strings"
	"sync"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Bounds of the notebook.
const (
	maxThreads = 1000      // threads recorded, the least recently used dropped first
	MaxCells   = 200       // cells of one session
	maxBytes   = 256 << 20 // code, stdin and input files of all the cells recorded
)

// cell is one cell of a thread.
type cell[S any] struct {
	key     string // its message's Request.Key
	src     S
	user    string
	ex      formatting.Extraction
	files   []executor.File // its input files, which go into its replay
	skipped []executor.OmittedFile
	ok      bool       // ran to success: part of the later cells' replay
	asked   Request[S] // what its re-run reply's buttons need (buttons.go)
	// res is how it ran, its files left out, for the session's notebook
	// (export.go); nil when it did not run.
	res *executor.Result
}

func (c cell[S]) size() int64 {
	n := int64(len(c.ex.Code) + len(c.ex.Stdin))
	for _, f := range c.files {
		n += int64(len(f.Content))
	}
	if c.res != nil {
		n += int64(len(c.res.Stdout) + len(c.res.Stderr))
		for _, d := range c.res.Results {
			for k, v := range d.Data {
				n += int64(len(k) + len(v))
			}
		}
	}
	return n
}

func (c cell[S]) request() executor.Request {
	return executor.Request{Code: c.ex.Code, Stdin: c.ex.Stdin, Files: c.files}
}

// thread is the notebook's record of one thread, a session: its cells
// in order.
type thread[S any] struct {
	id    string // the session's
	cells []cell[S]
	// known: the record holds the thread's earlier cells (it began in
	// this process, was recovered or reset); else it is recovered first.
	known   bool
	bytes   int64
	posters map[string]uint64 // user → the sequence number of their last cell
	keys    []string          // its entries in notebook.keys
}

// notebook is the flow's record of the threads that are sessions, a
// thread per session, bounded in threads, cells and bytes; safe for
// concurrent use. The cells of one thread change under its session's
// turn only.
type notebook[S any] struct {
	mu    sync.Mutex
	order *list.List // of *thread[S], most recent first
	byID  map[string]*list.Element
	keys  map[string]*thread[S] // a cell's message key or reply id → its thread
	bytes int64
	seq   uint64

	maxThreads, maxCells int
	maxBytes             int64
}

func newNotebook[S any]() *notebook[S] {
	return &notebook[S]{order: list.New(), byID: make(map[string]*list.Element), keys: make(map[string]*thread[S]),
		maxThreads: maxThreads, maxCells: MaxCells, maxBytes: maxBytes}
}

// open returns the thread of session id, new when there is none.
func (nb *notebook[S]) open(id string) *thread[S] {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if el, ok := nb.byID[id]; ok {
		nb.order.MoveToFront(el)
		return el.Value.(*thread[S])
	}
	t := &thread[S]{id: id, posters: make(map[string]uint64)}
	nb.byID[id] = nb.order.PushFront(t)
	nb.evictLocked(t)
	return t
}

// evictLocked drops the least recently used threads but keep while the
// record is over its bounds.
func (nb *notebook[S]) evictLocked(keep *thread[S]) {
	for el := nb.order.Back(); el != nil && (nb.order.Len() > nb.maxThreads || nb.bytes > nb.maxBytes); {
		prev := el.Prev()
		if t := el.Value.(*thread[S]); t != keep {
			nb.dropLocked(t)
		}
		el = prev
	}
}

func (nb *notebook[S]) dropLocked(t *thread[S]) {
	if el, ok := nb.byID[t.id]; ok && el.Value == t {
		nb.order.Remove(el)
		delete(nb.byID, t.id)
	}
	nb.clearLocked(t)
}

// clearLocked forgets t's cells.
func (nb *notebook[S]) clearLocked(t *thread[S]) {
	for _, k := range t.keys {
		if nb.keys[k] == t {
			delete(nb.keys, k)
		}
	}
	nb.bytes -= t.bytes
	t.bytes, t.cells, t.keys = 0, nil, nil
}

// heldLocked reports whether t is in the record (not dropped).
func (nb *notebook[S]) heldLocked(t *thread[S]) bool {
	el, ok := nb.byID[t.id]
	return ok && el.Value == t
}

// keyLocked maps key to t.
func (nb *notebook[S]) keyLocked(t *thread[S], key string) {
	if key != "" && nb.keys[key] != t {
		nb.keys[key] = t
		t.keys = append(t.keys, key)
	}
}

// sessionOf returns the session of a cell's message key or reply id.
func (nb *notebook[S]) sessionOf(id string) string {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if t := nb.keys[id]; t != nil {
		return t.id
	}
	return ""
}

// index returns the position of key's cell in t, or -1.
func (nb *notebook[S]) index(t *thread[S], key string) int {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	for i, c := range t.cells {
		if c.key == key {
			return i
		}
	}
	return -1
}

// len returns the number of t's cells.
func (nb *notebook[S]) len(t *thread[S]) int {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	return len(t.cells)
}

// at returns t's cell i.
func (nb *notebook[S]) at(t *thread[S], i int) cell[S] {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	return t.cells[i]
}

// replay returns the successful cells before cell i of t: never nil, so
// that an empty replay says the session starts from nothing.
func (nb *notebook[S]) replay(t *thread[S], i int) []executor.Request {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	out := []executor.Request{}
	for _, c := range t.cells[:min(i, len(t.cells))] {
		if c.ok {
			out = append(out, c.request())
		}
	}
	return out
}

// put records c as cell i of t (i == its length: a new cell), unless t
// was dropped meanwhile: its next cell recovers it.
func (nb *notebook[S]) put(t *thread[S], i int, c cell[S]) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if !nb.heldLocked(t) {
		return
	}
	if i < len(t.cells) {
		t.bytes -= t.cells[i].size()
		nb.bytes -= t.cells[i].size()
		t.cells[i] = c
	} else {
		t.cells = append(t.cells, c)
	}
	t.bytes += c.size()
	nb.bytes += c.size()
	nb.seq++
	t.posters[c.user] = nb.seq
	nb.keyLocked(t, c.key)
	nb.evictLocked(t)
}

// replied notes reply as the reply of a cell of t.
func (nb *notebook[S]) replied(t *thread[S], reply string) {
	if reply == "" {
		return
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if nb.heldLocked(t) {
		nb.keyLocked(t, reply)
	}
}

// forget drops the cell of the message key, wherever it is.
func (nb *notebook[S]) forget(key string) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	t := nb.keys[key]
	if t == nil {
		return
	}
	delete(nb.keys, key)
	for i, c := range t.cells {
		if c.key == key {
			t.bytes -= c.size()
			nb.bytes -= c.size()
			t.cells = append(t.cells[:i:i], t.cells[i+1:]...)
			return
		}
	}
}

// reset forgets the cells of session id; the next one starts fresh.
func (nb *notebook[S]) reset(id string) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	el, ok := nb.byID[id]
	if !ok {
		t := &thread[S]{id: id, posters: make(map[string]uint64)}
		el = nb.order.PushFront(t)
		nb.byID[id] = el
	}
	t := el.Value.(*thread[S])
	nb.clearLocked(t)
	t.known = true
	nb.evictLocked(t)
}

// recent returns the session whose id starts with prefix that user last
// ran a cell in, or "".
func (nb *notebook[S]) recent(user, prefix string) string {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	best, id := uint64(0), ""
	for el := nb.order.Front(); el != nil; el = el.Next() {
		t := el.Value.(*thread[S])
		if seq := t.posters[user]; seq > best && strings.HasPrefix(t.id, prefix) {
			best, id = seq, t.id
		}
	}
	return id
}

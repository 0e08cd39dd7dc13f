package answer

import "sync"

// keys holds, per message being answered, its lock and its newest event,
// without holding memory for messages at rest.
type keys[S any] struct {
	mu    sync.Mutex
	slots map[string]*slot[S]
}

type slot[S any] struct {
	mu   sync.Mutex // held while the message is answered
	refs int        // tickets not released
	gen  int        // tickets taken; the newest has this number
	src  S          // the newest ticket's source
}

func newKeys[S any]() *keys[S] { return &keys[S]{slots: make(map[string]*slot[S])} }

// ticket is one event's claim on its message.
type ticket[S any] struct {
	k      *keys[S]
	key    string
	s      *slot[S]
	gen    int
	locked bool
}

// take returns a ticket for key, the newest.
func (k *keys[S]) take(key string, src S) *ticket[S] {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.slots[key]
	if s == nil {
		s = &slot[S]{}
		k.slots[key] = s
	}
	s.refs++
	s.gen++
	s.src = src
	return &ticket[S]{k: k, key: key, s: s, gen: s.gen}
}

// last returns the source of key's newest ticket, while there is one.
func (k *keys[S]) last(key string) (S, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.slots[key]; s != nil {
		return s.src, true
	}
	var zero S
	return zero, false
}

// tryLock locks the message unless another event holds it.
func (t *ticket[S]) tryLock() bool {
	t.locked = t.s.mu.TryLock()
	return t.locked
}

// lock locks the message, waiting for the event that holds it.
func (t *ticket[S]) lock() {
	t.s.mu.Lock()
	t.locked = true
}

// stale reports whether a newer event for the message has come.
func (t *ticket[S]) stale() bool {
	t.k.mu.Lock()
	defer t.k.mu.Unlock()
	return t.s.gen != t.gen
}

// release unlocks the message if t locked it and gives t up; nil is a
// no-op.
func (t *ticket[S]) release() {
	if t == nil {
		return
	}
	if t.locked {
		t.locked = false
		t.s.mu.Unlock()
	}
	t.k.mu.Lock()
	defer t.k.mu.Unlock()
	t.s.refs--
	if t.s.refs == 0 {
		delete(t.k.slots, t.key)
	}
}

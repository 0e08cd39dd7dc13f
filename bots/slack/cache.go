package slack

import (
	"container/list"
	"sync"
	"time"
)

// lru is a bounded map whose entries also expire: at most size entries, the
// least recently used dropped first, none older than ttl. Safe for
// concurrent use.
type lru[V any] struct {
	size int
	ttl  time.Duration
	now  func() time.Time

	mu    sync.Mutex
	order *list.List // of *lruEntry[V], most recent first
	byKey map[string]*list.Element
}

type lruEntry[V any] struct {
	key   string
	value V
	added time.Time
}

func newLRU[V any](size int, ttl time.Duration, now func() time.Time) *lru[V] {
	return &lru[V]{size: size, ttl: ttl, now: now, order: list.New(), byKey: make(map[string]*list.Element)}
}

// get returns the live entry for key and marks it used.
func (c *lru[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.byKey[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if c.now().Sub(e.added) > c.ttl {
		c.removeLocked(el)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// put stores value under key, restarting its ttl.
func (c *lru[V]) put(key string, value V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.removeLocked(el)
	}
	c.insertLocked(key, value)
}

// add stores key unless a live entry exists, reporting whether it did: the
// building block of de-duplication.
func (c *lru[V]) add(key string, value V) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		if c.now().Sub(el.Value.(*lruEntry[V]).added) <= c.ttl {
			return false
		}
		c.removeLocked(el)
	}
	c.insertLocked(key, value)
	return true
}

func (c *lru[V]) insertLocked(key string, value V) {
	c.byKey[key] = c.order.PushFront(&lruEntry[V]{key: key, value: value, added: c.now()})
	for c.order.Len() > c.size {
		c.removeLocked(c.order.Back())
	}
}

// remove drops key and returns what it held.
func (c *lru[V]) remove(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.byKey[key]
	if !ok {
		return zero, false
	}
	c.removeLocked(el)
	return el.Value.(*lruEntry[V]).value, true
}

func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *lru[V]) removeLocked(el *list.Element) {
	c.order.Remove(el)
	delete(c.byKey, el.Value.(*lruEntry[V]).key)
}

// keyLock serialises work per key (one source message) without holding
// memory for idle keys.
type keyLock struct {
	mu    sync.Mutex
	locks map[string]*keyLockEntry
}

type keyLockEntry struct {
	mu   sync.Mutex
	refs int
}

func newKeyLock() *keyLock { return &keyLock{locks: make(map[string]*keyLockEntry)} }

// lock locks key and returns its unlock function.
func (k *keyLock) lock(key string) func() {
	k.mu.Lock()
	e := k.locks[key]
	if e == nil {
		e = &keyLockEntry{}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// Package replycache is the adapters' memory of what they answered: a
// bounded map whose entries also expire, safe for concurrent handlers.
package replycache

import (
	"container/list"
	"sync"
	"time"
)

// Cache holds at most size entries, the least recently used dropped first,
// none older than ttl (from when it was stored). Safe for concurrent use;
// every method is one atomic step, so a check and a store (Add, Update)
// cannot interleave with another handler's.
type Cache[V any] struct {
	size int
	ttl  time.Duration
	now  func() time.Time

	mu    sync.Mutex
	order *list.List // of *entry[V], most recent first
	byKey map[string]*list.Element
}

type entry[V any] struct {
	key   string
	value V
	added time.Time
}

// New returns a Cache; now is its clock (nil: time.Now).
func New[V any](size int, ttl time.Duration, now func() time.Time) *Cache[V] {
	if now == nil {
		now = time.Now
	}
	return &Cache[V]{size: size, ttl: ttl, now: now, order: list.New(), byKey: make(map[string]*list.Element)}
}

// Get returns the live entry for key and marks it used.
func (c *Cache[V]) Get(key string) (V, bool) {
	return c.Update(key, func(*V) {})
}

// Update applies f to the live entry for key, marks it used, and returns
// the result. Its age is not restarted.
func (c *Cache[V]) Update(key string, f func(*V)) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.liveLocked(key)
	if el == nil {
		var zero V
		return zero, false
	}
	e := el.Value.(*entry[V])
	f(&e.value)
	c.order.MoveToFront(el)
	return e.value, true
}

// Put stores value under key, restarting its ttl.
func (c *Cache[V]) Put(key string, value V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.removeLocked(el)
	}
	c.insertLocked(key, value)
}

// Add stores value under key unless a live entry exists, reporting whether
// it did: the building block of de-duplication and reservations.
func (c *Cache[V]) Add(key string, value V) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.liveLocked(key) != nil {
		return false
	}
	c.insertLocked(key, value)
	return true
}

// Remove drops key and returns what it held.
func (c *Cache[V]) Remove(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.removeLocked(el)
	return el.Value.(*entry[V]).value, true
}

// Len is the number of entries held, expired ones included until they are
// looked up or pushed out.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// liveLocked returns key's element, dropping it when it has expired.
func (c *Cache[V]) liveLocked(key string) *list.Element {
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	if c.now().Sub(el.Value.(*entry[V]).added) > c.ttl {
		c.removeLocked(el)
		return nil
	}
	return el
}

func (c *Cache[V]) insertLocked(key string, value V) {
	c.byKey[key] = c.order.PushFront(&entry[V]{key: key, value: value, added: c.now()})
	for c.order.Len() > c.size {
		c.removeLocked(c.order.Back())
	}
}

func (c *Cache[V]) removeLocked(el *list.Element) {
	c.order.Remove(el)
	delete(c.byKey, el.Value.(*entry[V]).key)
}

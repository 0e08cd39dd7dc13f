package replycache

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestBoundedAndExpiring(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	c := New[int](2, time.Minute, clk.now)
	c.Put("a", 1)
	c.Put("b", 2)
	if _, ok := c.Get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.Put("c", 3)
	if _, ok := c.Get("b"); ok {
		t.Fatal("b kept beyond the size; the least recently used goes first")
	}
	if c.Len() != 2 {
		t.Fatalf("len %d", c.Len())
	}
	clk.t = clk.t.Add(30 * time.Second)
	if v, ok := c.Update("a", func(v *int) { *v = 10 }); !ok || v != 10 {
		t.Fatalf("update = %d, %v", v, ok)
	}
	clk.t = clk.t.Add(31 * time.Second)
	if _, ok := c.Get("a"); ok {
		t.Fatal("a outlived its ttl: Update must not restart it")
	}
	if !c.Add("a", 4) || c.Add("a", 5) {
		t.Fatal("Add stores only where no live entry is")
	}
	if v, ok := c.Remove("a"); !ok || v != 4 {
		t.Fatalf("remove = %d, %v", v, ok)
	}
}

func TestAddIsAtomic(t *testing.T) {
	c := New[int](100, time.Hour, nil)
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Add("k", i) {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d handlers reserved the same key", won.Load())
	}
}

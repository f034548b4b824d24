package server

import "testing"

// TestListCacheKeepsPagesOfOneVersion: a page is served only at the
// version it was read at; a page read at an older version than one seen
// since is never kept.
func TestListCacheKeepsPagesOfOneVersion(t *testing.T) {
	t.Parallel()
	var c listCache
	p1, p2 := listKey{0, 100, ""}, listKey{100, 100, ""}
	if _, ok := c.get(0, p1); ok {
		t.Fatal("empty cache served a page")
	}
	c.put(3, p1, []byte("v3 p1"))
	c.put(3, p2, []byte("v3 p2"))
	if b, ok := c.get(3, p1); !ok || string(b) != "v3 p1" {
		t.Fatalf("get(3, p1) = %q, %v", b, ok)
	}
	if _, ok := c.get(4, p1); ok {
		t.Fatal("a page of version 3 served at version 4")
	}
	c.put(4, p1, []byte("v4 p1"))
	if _, ok := c.get(4, p2); ok {
		t.Fatal("a page of version 3 survived version 4")
	}
	c.put(3, p2, []byte("late v3 p2")) // read before version 4: stale
	if _, ok := c.get(3, p2); ok {
		t.Fatal("a page of an older version was kept")
	}
	if _, ok := c.get(4, p2); ok {
		t.Fatal("a page of an older version is served at the newer one")
	}
	for i := range listCachePages + 1 {
		c.put(4, listKey{i, 1, ""}, []byte("x"))
	}
	if n := len(c.pages); n > listCachePages {
		t.Fatalf("%d pages kept, bound %d", n, listCachePages)
	}
}

package alpha

import "testing" // block:tests{

func TestShared(t *testing.T) {
	got := Shared([]string{"a", "a", "b", "", "cccccccccccc", "cccccccccccc"})
	if len(got) != 2 {
		t.Fatalf("got %v", got)
	}
	if got["a"] != 2 {
		t.Errorf("a: %d", got["a"])
	}
	if got["cccccccccc"] != 2 {
		t.Errorf("c: %d", got["cccccccccc"])
	}
	if _, ok := got["b"]; ok {
		t.Error("b seen once")
	}
	if Shared(nil) != nil {
		t.Error("nil")
	}
} // }block:tests

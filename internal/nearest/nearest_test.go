package nearest

import (
	"reflect"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"H100", "H200", 1}, {"héllo", "hello", 1}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"H200", "A100", "H100", "B200"}
	got := Closest(names, func(c string) int { return Distance(c, "H1000") }, 3)
	if want := []string{"H100", "A100", "H200"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Closest = %v, want %v", got, want)
	}
	if got := Closest(names, func(string) int { return 0 }, 10); len(got) != 4 {
		t.Fatalf("n above the count must return all, got %v", got)
	}
}

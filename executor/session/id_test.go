package session

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"a", true},
		{"thread-1.2_x:y@z", true},
		{strings.Repeat("a", MaxIDLength), true},
		{"", false},
		{strings.Repeat("a", MaxIDLength+1), false},
		{"a b", false},
		{"a/b", false},
		{"a\n", false},
		{"\na", false},
		{"é", false},
	} {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

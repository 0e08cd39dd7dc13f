package choices

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestParseChannels: mentions and ids, spaces or commas, no repeats; a
// channel the operator does not allow, a word that is no channel and an
// empty list are refused with a line saying so.
func TestParseChannels(t *testing.T) {
	ref := regexp.MustCompile(`^(?:<#(C[0-9]+)>|(C[0-9]+))$`)
	for _, tc := range []struct {
		v       string
		allowed []string
		want    []string
		err     string
	}{
		{v: "<#C1> C2,C1", want: []string{"C1", "C2"}},
		{v: "C1\tC2", allowed: []string{"C1", "C2"}, want: []string{"C1", "C2"}},
		{v: "C3", allowed: []string{"C1"}, err: "<#C3> is not one of the channels this runblock's operator allows (X_CHANNELS)"},
		{v: "general", err: `"general" is not a channel: mention channels (#name) or give their ids, or all`},
		{v: " , ", err: "no channel given"},
	} {
		got, err := ParseChannels(tc.v, ref, tc.allowed, "X_CHANNELS", "all")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseChannels(%q) = %v, %v; want an error with %q", tc.v, got, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("ParseChannels(%q) = %v, %v; want %v", tc.v, got, err, tc.want)
		}
	}
}

package stage

import (
	"os"
	"strconv"
	"testing"
)

// TestForkedRunAlone: a forked run is reported before its teardown only
// when the count found python (by its pid in the run's namespace) or no
// process at all.
func TestForkedRunAlone(t *testing.T) {
	inner, err := innerPID(os.Getpid())
	if err != nil || inner != strconv.Itoa(os.Getpid()) {
		t.Fatalf("innerPID of this process (in the PID namespace it sees) = %q, %v: want %d", inner, err, os.Getpid())
	}
	r := forkedRun{inner: "2"}
	for _, tt := range []struct {
		pids []string
		want bool
	}{
		{nil, true},
		{[]string{"2"}, true},
		{[]string{"3"}, false},
		{[]string{"2", "7"}, false},
	} {
		if got := r.alone(tt.pids); got != tt.want {
			t.Errorf("alone(%q) = %v, want %v", tt.pids, got, tt.want)
		}
	}
}

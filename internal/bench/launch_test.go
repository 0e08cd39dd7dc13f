package bench

import (
	"testing"
	"time"
)

// TestLaunchStatsP999: the launch rows publish p99.9, the nearest rank
// of the launches that worked: the 999th of 1,000 (not the 1,000th, which
// q/100*n's rounding, 999.0000000000001, made it), the slowest of 100.
func TestLaunchStatsP999(t *testing.T) {
	for _, tt := range []struct {
		n         int
		p99, p999 time.Duration
	}{
		{1000, 990 * time.Millisecond, 999 * time.Millisecond},
		{100, 99 * time.Millisecond, 100 * time.Millisecond},
		{2000, 1980 * time.Millisecond, 1998 * time.Millisecond},
	} {
		l := launched{runs: tt.n, ok: tt.n}
		for i := tt.n; i >= 1; i-- { // unsorted, as launches end
			l.latencies = append(l.latencies, time.Duration(i)*time.Millisecond)
		}
		s := launchStats(launchHello, "hello", patternBurst, l)
		if s.P99MS != ms(tt.p99) || s.P999MS != ms(tt.p999) {
			t.Errorf("%d launches: p99 %v ms, p99.9 %v ms: want %v, %v", tt.n, s.P99MS, s.P999MS, ms(tt.p99), ms(tt.p999))
		}
	}
}

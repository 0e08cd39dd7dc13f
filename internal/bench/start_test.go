package bench

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMeasureStart: the start section's figures are the p50 and the max
// of the starts that worked, a failed start counted apart with its
// error, and the target judges every start.
func TestMeasureStart(t *testing.T) {
	times := []startTimes{
		{300 * time.Millisecond, 320 * time.Millisecond},
		{100 * time.Millisecond, 150 * time.Millisecond},
		{}, // fails
		{200 * time.Millisecond, 210 * time.Millisecond},
	}
	i := 0
	start := func(context.Context) (startTimes, error) {
		defer func() { i++ }()
		if i == 2 {
			return startTimes{}, errors.New("the executor ended before it was ready")
		}
		return times[i], nil
	}
	s := measureStart(context.Background(), len(times), start)
	want := StartStats{Runs: 4, OK: 3, ReadyP50MS: 200, ReadyMaxMS: 300, FirstRunP50MS: 210, FirstRunMaxMS: 320,
		Error: "the executor ended before it was ready"}
	if s != want {
		t.Errorf("measureStart = %+v, want %+v", s, want)
	}

	r := &Report{Start: &s}
	r.evaluate()
	tg := r.Targets[len(r.Targets)-1]
	if !strings.Contains(tg.Name, "ready <= 1.5 s") || tg.Status != statusNotMet || !strings.Contains(tg.Detail, "ready p50 200 ms, max 300 ms") {
		t.Errorf("target %+v: want not met (a start failed), with the figures", tg)
	}
	s.OK, s.Runs = 3, 3
	r.evaluate()
	if tg := r.Targets[len(r.Targets)-1]; tg.Status != statusMet {
		t.Errorf("target %+v: want met", tg)
	}
	var out strings.Builder
	if err := r.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "to /readyz 200") || !strings.Contains(out.String(), "to its first run's answer") {
		t.Errorf("report lacks the start section:\n%s", out.String())
	}
}

// TestMeasureStartFailure: a binary that ends before it is ready (here
// false, started as `false executor`) is a failed start with the reason,
// not a hang, and leaves no figures.
func TestMeasureStartFailure(t *testing.T) {
	exe, err := exec.LookPath("false")
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := measureStart(ctx, 2, executorStart(exe, nil))
	if s.Runs != 2 || s.OK != 0 || s.ReadyMaxMS != 0 || s.FirstRunMaxMS != 0 || !strings.Contains(s.Error, "ended before it was ready") {
		t.Errorf("measureStart = %+v: want two failed starts, no figures", s)
	}
	r := &Report{Start: &s}
	r.evaluate()
	if tg := r.Targets[len(r.Targets)-1]; tg.Status != statusNA {
		t.Errorf("target %+v: want n/a without a start that worked", tg)
	}
}

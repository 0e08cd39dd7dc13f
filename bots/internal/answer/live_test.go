package answer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// liveText is the live view of a run of code with stdout so far, d in.
func liveText(code, stdout string, d time.Duration) string {
	return formatting.RenderRun(formatting.Discord, formatting.Extraction{Found: true, Code: code},
		executor.Result{Success: true, Stdout: stdout, Duration: d}, formatting.RenderOptions{Running: true}).Text
}

// resultText is the reply to a run of code that printed stdout in d.
func resultText(code, stdout string, d time.Duration) string {
	return formatting.RenderRun(formatting.Discord, formatting.Extraction{Found: true, Code: code},
		executor.Result{Success: true, Stdout: stdout, Duration: d}, formatting.RenderOptions{}).Text
}

// TestLiveOutputShownThenReplacedInTheSameReply: a run still going after
// the grace shows its output so far in a reply, edited as it grows at most
// once a second with the latest output only, and the result replaces it in
// that reply: one post, no output shown twice.
func TestLiveOutputShownThenReplacedInTheSameReply(t *testing.T) {
	clock := fakerunner.NewClock()
	runner, outputs, written, end := fakerunner.Scripted(5 * time.Second)
	f, p := newFlow(t, runner, func(c *Config) { c.Clock = clock })
	const code = "loop()"
	done := answer(f, request("m1", "u", code))

	outputs <- "1\n"
	<-written
	shown := p.await("post m1: " + liveText(code, "1\n", 2*time.Second))
	clock.Advance(time.Second) // within the grace: nothing yet
	clock.Advance(time.Second)
	seen(t, shown, "the output so far after the grace")

	// Three more states within the next second: only the last is shown,
	// once the second has passed.
	for _, s := range []string{"1\n2\n", "1\n2\n3\n", "1\n2\n3\n4\n"} {
		outputs <- s
		<-written
	}
	edited := p.await("edit r1: " + liveText(code, "1\n2\n3\n4\n", 3*time.Second))
	clock.Advance(500 * time.Millisecond)
	clock.Advance(500 * time.Millisecond)
	seen(t, edited, "the latest output a second later")

	close(end)
	<-done
	want(t, p, "react m1 +⏳",
		"post m1: "+liveText(code, "1\n", 2*time.Second),
		"edit r1: "+liveText(code, "1\n2\n3\n4\n", 3*time.Second),
		"edit r1: "+resultText(code, "1\n2\n3\n4\n", 5*time.Second),
		"react m1 -⏳", "react m1 +✅")
	if rec, ok := f.Recall("m1"); !ok || rec.Reply != "r1" {
		t.Fatalf("record %+v %v, want the live reply r1", rec, ok)
	}
}

// TestLiveOutputFastRunPostsOnce: a run that writes and ends within the
// grace makes exactly one post, no edits; so does one still going after it
// that writes nothing.
func TestLiveOutputFastRunPostsOnce(t *testing.T) {
	for _, tt := range []struct {
		name    string
		advance time.Duration // before the run ends
		output  string
	}{
		{"ends within the grace", LiveGrace - time.Millisecond, "hi\n"},
		{"writes nothing", 10 * time.Second, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := fakerunner.NewClock()
			runner, outputs, written, end := fakerunner.Scripted(5 * time.Second)
			f, p := newFlow(t, runner, func(c *Config) { c.Clock = clock })
			done := answer(f, request("m1", "u", "run()"))
			if tt.output != "" {
				outputs <- tt.output
				<-written
			}
			clock.Advance(tt.advance)
			close(end)
			<-done
			want(t, p, "react m1 +⏳", "post m1: "+resultText("run()", tt.output, 5*time.Second), "react m1 -⏳", "react m1 +✅")
		})
	}
}

// TestLiveOutputTakesOverTheQueuedReply: a run that showed its place in
// the queue shows its output in that reply, and its result replaces it
// there.
func TestLiveOutputTakesOverTheQueuedReply(t *testing.T) {
	clock := fakerunner.NewClock()
	outputs, written, end, release := make(chan string), make(chan struct{}), make(chan struct{}), make(chan struct{})
	runner := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		job.Progress(executor.Progress{State: executor.StateQueued, Ahead: 1})
		<-release
		job.Progress(executor.Progress{State: executor.StateRunning})
		if out := executor.OutputOf(ctx); out != nil {
			out(<-outputs, "")
		}
		written <- struct{}{}
		<-end
		return executor.Result{Success: true, Stdout: "a\n", Duration: 3 * time.Second}, nil
	})
	f, p := newFlow(t, runner, func(c *Config) { c.Clock = clock })
	queued := p.await("post m1: " + progressText(executor.Progress{State: executor.StateQueued, Ahead: 1}))
	done := answer(f, request("m1", "u", "run()"))
	<-queued
	running := p.await("edit r1: " + progressText(executor.Progress{State: executor.StateRunning}))
	close(release)
	<-running
	outputs <- "a\n"
	<-written
	shown := p.await("edit r1: " + liveText("run()", "a\n", 2*time.Second))
	clock.Advance(2 * time.Second)
	seen(t, shown, "the output so far in the queued reply")
	close(end)
	<-done
	got := p.Events()
	if posts := countPrefix(got, "post "); posts != 1 {
		t.Fatalf("%d posts, want the queued reply only:\n%s", posts, strings.Join(got, "\n"))
	}
	if last := got[len(got)-3]; last != "edit r1: "+resultText("run()", "a\n", 3*time.Second) {
		t.Fatalf("the result did not replace the live reply: %q", last)
	}
}

// seen fails the test unless ch closes soon: what shows the failure of a
// flow that never shows the output.
func seen(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("not shown: %s", what)
	}
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

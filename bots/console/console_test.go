package console_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/syncbuf"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fence = "```"

// pipedExample is the README's first command's input.
const pipedExample = "please run\n" + fence + "python\nprint(1+1)\n" + fence + "\n"

type countingMetrics struct {
	mu                sync.Mutex
	received, replied int
}

func (m *countingMetrics) MessageReceived(p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p == console.Platform {
		m.received++
	}
}

func (m *countingMetrics) MessageReplied(p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p == console.Platform {
		m.replied++
	}
}

// open starts a console over in and returns it with its output.
func open(t *testing.T, in io.Reader, r executor.Submitter, mod func(*console.Config)) (*console.Bot, *syncbuf.Buffer) {
	t.Helper()
	out := &syncbuf.Buffer{}
	cfg := console.Config{In: in, Out: out}
	if mod != nil {
		mod(&cfg)
	}
	b := console.New(cfg, r, nil)
	if err := b.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b, out
}

func waitDone(t *testing.T, b *console.Bot) {
	t.Helper()
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("console did not finish")
	}
}

func okRunner(stdout string, seen *[]executor.Job) *fakerunner.Runner {
	var mu sync.Mutex
	return &fakerunner.Runner{Func: func(_ context.Context, job executor.Job) (executor.Result, error) {
		mu.Lock()
		*seen = append(*seen, job)
		mu.Unlock()
		return executor.Result{Success: true, Stdout: stdout, StdoutBytes: int64(len(stdout))}, nil
	}}
}

func TestPipedMessageIsAnswered(t *testing.T) {
	var jobs []executor.Job
	m := &countingMetrics{}
	b, out := open(t, strings.NewReader(pipedExample), okRunner("2\n", &jobs), func(c *console.Config) { c.Metrics = m })
	waitDone(t, b)

	if len(jobs) != 1 {
		t.Fatalf("%d jobs submitted, want 1", len(jobs))
	}
	if got := strings.TrimSpace(jobs[0].Request.Code); got != "print(1+1)" {
		t.Errorf("code %q, want print(1+1)", got)
	}
	if jobs[0].User != console.DefaultUser {
		t.Errorf("user %q, want %q", jobs[0].User, console.DefaultUser)
	}
	want := formatting.Render(formatting.Console, executor.Result{Success: true, Stdout: "2\n", StdoutBytes: 2}, formatting.RenderOptions{Header: "[1]"}).Text
	if got := out.String(); strings.TrimSpace(got) != strings.TrimSpace(want) || !strings.Contains(got, "2") {
		t.Errorf("output %q, want the rendered reply %q", got, want)
	}
	if m.received != 1 || m.replied != 1 {
		t.Errorf("metrics received=%d replied=%d, want 1 and 1", m.received, m.replied)
	}
	if b.Ready() {
		t.Error("console still ready after the end of its input")
	}
}

func TestMessagesAreAnsweredInOrder(t *testing.T) {
	var jobs []executor.Job
	r := &fakerunner.Runner{Func: func(_ context.Context, job executor.Job) (executor.Result, error) {
		jobs = append(jobs, job)
		return executor.Result{Success: true, Stdout: "out-" + strings.TrimSpace(job.Request.Code) + "\n"}, nil
	}}
	in := fence + "python\n1\n" + fence + "\n\n" + fence + "python\n2\n" + fence + "\n\n" + fence + "python\n3\n" + fence
	b, out := open(t, strings.NewReader(in), r, nil)
	waitDone(t, b)
	got := out.String()
	i1, i2, i3 := strings.Index(got, "out-1"), strings.Index(got, "out-2"), strings.Index(got, "out-3")
	if len(jobs) != 3 || i1 < 0 || i2 < i1 || i3 < i2 {
		t.Errorf("%d jobs; output not in order:\n%s", len(jobs), got)
	}
}

func TestMessagesWithoutCodeGetANotice(t *testing.T) {
	tests := []struct {
		name, in string
		notice   formatting.Notice
	}{
		{"plain text", "hello there, what can you do?", formatting.NoticeNoCode},
		{"other language", fence + "javascript\nconsole.log(1)\n" + fence, formatting.NoticeNotPython},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
				t.Error("a message without Python code was submitted")
				return executor.Result{}, nil
			}}
			b, out := open(t, strings.NewReader(tt.in), r, nil)
			waitDone(t, b)
			want := formatting.RenderNotice(formatting.Console, tt.notice)
			if strings.TrimSpace(out.String()) != strings.TrimSpace(want) {
				t.Errorf("output %q, want %q", out.String(), want)
			}
		})
	}
}

func TestRefusalsAreRendered(t *testing.T) {
	errs := []error{
		&executor.Error{Code: executor.ErrRateLimited, Message: "slow down", RetryAfter: 12 * time.Second},
		executor.Errorf(executor.ErrBusy, "queue full"),
		executor.Errorf(executor.ErrInternal, "secret detail /var/lib/x"),
	}
	for _, e := range errs {
		t.Run(string(executor.ErrorCode(e)), func(t *testing.T) {
			r := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) { return executor.Result{}, e }}
			b, out := open(t, strings.NewReader(pipedExample), r, nil)
			waitDone(t, b)
			want := formatting.RenderError(formatting.Console, e)
			if strings.TrimSpace(out.String()) != strings.TrimSpace(want) {
				t.Errorf("output %q, want %q", out.String(), want)
			}
		})
	}
}

func TestTooLargeMessageIsRefusedAndTheNextAnswered(t *testing.T) {
	tests := []struct{ name, big string }{
		{"many lines", fence + "python\n" + strings.Repeat("x = 1\n", 400) + fence},
		{"one long line", "`" + strings.Repeat("x", 5000) + "`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var jobs []executor.Job
			in := tt.big + "\n\n" + pipedExample
			b, out := open(t, strings.NewReader(in), okRunner("2\n", &jobs), func(c *console.Config) { c.MaxMessageBytes = 1000 })
			waitDone(t, b)
			if len(jobs) != 1 {
				t.Fatalf("%d jobs, want 1 (the small message only)", len(jobs))
			}
			tooLarge := formatting.RenderError(formatting.Console, executor.Errorf(executor.ErrTooLarge, "message over 1000 bytes"))
			if got := out.String(); !strings.HasPrefix(got, strings.TrimSpace(tooLarge)) {
				t.Errorf("output %q does not start with the too-large reply %q", got, tooLarge)
			}
		})
	}
}

// blockingRunner lets a test hold a run in flight.
type blockingRunner struct {
	started chan executor.Job
	release chan struct{}
}

func newBlockingRunner() *blockingRunner {
	return &blockingRunner{started: make(chan executor.Job, 1), release: make(chan struct{})}
}

func (b *blockingRunner) runner() *fakerunner.Runner {
	return &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		b.started <- job
		select {
		case <-b.release:
			return executor.Result{Success: true, Stdout: "finished\n"}, nil
		case <-ctx.Done():
			return executor.Result{}, &executor.Error{Code: executor.ErrCanceled, Err: ctx.Err()}
		}
	}}
}

func TestEOFWaitsForThePendingReply(t *testing.T) {
	br := newBlockingRunner()
	pr, pw := io.Pipe()
	b, out := open(t, pr, br.runner(), nil)
	if _, err := io.WriteString(pw, pipedExample); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	<-br.started
	select {
	case <-b.Done():
		t.Fatal("console finished before the run in flight was answered")
	default:
	}
	close(br.release)
	waitDone(t, b)
	if !strings.Contains(out.String(), "finished") {
		t.Errorf("output %q lacks the reply", out.String())
	}
}

func TestCloseLetsTheRunInFlightFinish(t *testing.T) {
	br := newBlockingRunner()
	pr, pw := io.Pipe()
	defer pw.Close()
	b, out := open(t, pr, br.runner(), nil)
	if _, err := io.WriteString(pw, pipedExample+"\n"); err != nil {
		t.Fatal(err)
	}
	<-br.started

	closed := make(chan error, 1)
	go func() { closed <- b.Close(context.Background()) }()
	// The reader is busy with the run, so this write blocks until Close
	// closes the input: from then on Close is draining.
	if _, err := io.WriteString(pw, "more\n"); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write after Close = %v, want io.ErrClosedPipe", err)
	}
	if b.Ready() {
		t.Error("console still ready while closing")
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a run was in flight", err)
	default:
	}
	close(br.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "finished") {
		t.Errorf("output %q lacks the reply of the run in flight", out.String())
	}
	waitDone(t, b)
}

func TestCloseDeadlineCancelsTheRun(t *testing.T) {
	br := newBlockingRunner()
	pr, pw := io.Pipe()
	defer pw.Close()
	b, out := open(t, pr, br.runner(), nil)
	if _, err := io.WriteString(pw, pipedExample+"\n"); err != nil {
		t.Fatal(err)
	}
	<-br.started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	want := formatting.RenderError(formatting.Console, &executor.Error{Code: executor.ErrCanceled})
	if !strings.Contains(out.String(), strings.TrimSpace(want)) {
		t.Errorf("output %q lacks the cancellation reply %q", out.String(), want)
	}
}

func TestInteractiveBannerAndPrompt(t *testing.T) {
	var jobs []executor.Job
	b, out := open(t, strings.NewReader(pipedExample), okRunner("2\n", &jobs), func(c *console.Config) { c.Interactive = true })
	waitDone(t, b)
	got := out.String()
	if !strings.HasPrefix(got, "runblock console") || !strings.Contains(got, "you> ") || !strings.Contains(got, "runblock> ") {
		t.Errorf("interactive output lacks banner or prompts:\n%s", got)
	}
}

func TestPipedOutputHasNoPrompt(t *testing.T) {
	var jobs []executor.Job
	b, out := open(t, strings.NewReader(pipedExample), okRunner("2\n", &jobs), nil)
	waitDone(t, b)
	if got := out.String(); strings.Contains(got, "you> ") || strings.Contains(got, "runblock console") {
		t.Errorf("piped output shows the prompt:\n%s", got)
	}
}

// TestInterruptCancelsTheRun: a Ctrl-C (Interrupt) cancels the run in
// flight, whose reply says so and shows the output so far; the console goes
// on with the next message.
func TestInterruptCancelsTheRun(t *testing.T) {
	started := make(chan struct{}, 2)
	r := &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		if job.Request.Code != "loop()" {
			return fakerunner.Echo("ran: ")(ctx, job)
		}
		started <- struct{}{}
		<-ctx.Done()
		return executor.Result{Stdout: "partial 1\npartial 2\n"}, &executor.Error{Code: executor.ErrCanceled, Message: "run canceled", Err: ctx.Err()}
	}}
	in, feed := io.Pipe()
	b, out := open(t, in, r, nil)
	if b.Interrupt() {
		t.Fatal("Interrupt with nothing running reported a run")
	}
	go func() {
		_, _ = io.WriteString(feed, "`loop()`\n\n")
	}()
	<-started
	if !b.Interrupt() {
		t.Fatal("Interrupt did not find the run in flight")
	}
	go func() {
		_, _ = io.WriteString(feed, "`print(2)`\n\n")
		feed.Close()
	}()
	<-b.Done()
	got := out.String()
	for _, want := range []string{"Canceled", "partial 1\npartial 2", "ran: print(2)"} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
}

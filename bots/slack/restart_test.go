package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakeslack"
)

// restartable starts a harness whose Bot's clock says it started
// minutes ago, so that the messages the test posts are new to it: Bots look
// for earlier replies on Slack only for messages older than themselves.
func restartable(t *testing.T, cfg Config, runner executor.Submitter) (*harness, *clock) {
	t.Helper()
	clk := &clock{}
	clk.set(-10 * time.Minute)
	return start(t, cfg, runner, true, clk.install()), clk
}

// restart closes the Bot and starts another on the same fake Slack, as a
// restart or a deploy does: what the old one remembered is gone, and every
// message so far is older than the new one.
func (h *harness) restart(clk *clock) {
	h.t.Helper()
	h.settle()
	clk.set(0)
	h.open()
}

// reopen starts a new Bot that has seen nothing yet.
func (h *harness) reopen(clk *clock) {
	h.t.Helper()
	clk.set(-10 * time.Minute)
	h.open()
}

// lookups are the conversations.replies calls that read metadata.
func (h *harness) lookups() []fakeslack.Call {
	return h.fake.Calls("conversations.replies")
}

// onlyReply checks that the thread of m holds exactly one bot reply, r.
func (h *harness) onlyReply(m fakeslack.Message, r fakeslack.Message) fakeslack.Message {
	h.t.Helper()
	got := h.fake.BotReplies(m.Channel, threadOf(m.ThreadTS, m.TS))
	if len(got) != 1 || got[0].TS != r.TS {
		h.t.Fatalf("bot replies in the thread = %+v, want only %s", got, r.TS)
	}
	return got[0]
}

func TestReplyCarriesMetadataNamingItsSource(t *testing.T) {
	t.Parallel()
	h, _ := restartable(t, Config{}, echo)
	m := h.mention(h.channel(), h.user(), "```print(1)```")
	h.reaction(m, "white_check_mark")
	h.settle()
	r := h.onlyReply(m, h.fake.BotReplies(m.Channel, m.TS)[0])
	md := r.Metadata
	if md == nil || md.EventType != "runblock_reply" || md.EventPayload["source_ts"] != m.TS ||
		md.EventPayload["source_channel"] != m.Channel || md.EventPayload["reaction"] != "white_check_mark" {
		t.Fatalf("reply metadata = %+v", md)
	}
	// A message the process saw arrive needs no lookup: the memory knows.
	if n := len(h.lookups()); n != 0 {
		t.Fatalf("%d conversations.replies calls for a new message, want 0", n)
	}
}

func TestEditAfterRestartUpdatesTheSameReply(t *testing.T) {
	t.Parallel()
	runs := &fakerunner.Runner{Func: func(_ context.Context, job executor.Job) (executor.Result, error) {
		if strings.Contains(job.Request.Code, "fail") {
			return executor.Result{Stderr: "ValueError: fail\n", Error: "ValueError: fail", ExitCode: 1}, nil
		}
		return echo(context.Background(), job)
	}}
	h, clk := restartable(t, Config{EditWindow: DefaultEditWindow}, runs)
	for _, thread := range []bool{false, true} {
		{
			ch := h.channel()
			var m fakeslack.Message
			if thread {
				parent := h.message(ch, h.user(), "look at this")
				m = h.fake.PutMessage(fakeslack.Message{Channel: ch, User: h.user(), ThreadTS: parent.TS, Text: "<@U0BOT> ```print(1)```"})
				h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": ch, "user": m.User, "text": m.Text, "ts": m.TS, "thread_ts": parent.TS})
			} else {
				m = h.mention(ch, h.user(), "```print(1)```")
			}
			first := h.reply(m, "ran print(1)")
			h.reaction(m, "white_check_mark")
			h.restart(clk)

			h.edit(m, "<@U0BOT> ```print('fail')```")
			h.reaction(m, "x")
			h.settle()
			got := h.onlyReply(m, first)
			if !strings.Contains(got.Text, "ValueError") || got.Edits == 0 {
				t.Fatalf("in a thread %v: reply after the edit = %+v, want the first reply edited", thread, got)
			}
			if src, _ := h.fake.Get(m.Channel, m.TS); strings.Join(src.Reactions, ",") != "x" {
				t.Fatalf("in a thread %v: reactions on the source = %v, want only x (the ✅ of the first run is taken back)", thread, src.Reactions)
			}
			if md := got.Metadata; md == nil || md.EventPayload["source_ts"] != m.TS || md.EventPayload["reaction"] != "x" {
				t.Fatalf("in a thread %v: reply metadata after the edit = %+v", thread, md)
			}
			h.reopen(clk)
		}
	}
}

func TestDeleteAfterRestartDeletesTheReplyAndItsFile(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	long := fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: strings.Join(lines, "\n") + "\n"}, nil
	})
	h, clk := restartable(t, Config{}, long)
	m := h.mention(h.channel(), h.user(), "```for i in range(100): print(f'line {i}')```")
	r := h.reply(m, "line 0")
	f, err := h.fake.WaitFile(h.ctx, m.Channel, m.TS)
	if err != nil {
		t.Fatal(err)
	}
	h.reaction(m, "white_check_mark")
	h.restart(clk)

	h.remove(m)
	if err := h.fake.WaitGone(h.ctx, m.Channel, r.TS); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitCall(h.ctx, "files.delete", fakeslack.Param("file", f.ID)); err != nil {
		t.Fatal(err)
	}
	h.settle()
	lookups := h.lookups()
	if len(lookups) != 1 || lookups[0].Get("include_all_metadata") != "1" || lookups[0].Get("ts") != m.TS {
		t.Fatalf("conversations.replies calls = %+v, want one with include_all_metadata", lookups)
	}
}

func TestRedeliveryAfterRestartIsNotAnsweredAgain(t *testing.T) {
	t.Parallel()
	runs := &fakerunner.Runner{}
	h, clk := restartable(t, Config{}, runs)
	ch := h.channel()
	m := h.message(ch, h.user(), "<@U0BOT> ```print(1)```")
	env := h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": ch, "user": m.User, "text": m.Text, "ts": m.TS})
	r := h.reply(m, "ran: print(1)")
	h.reaction(m, "white_check_mark")
	if _, err := h.fake.WaitAck(h.ctx, env); err != nil {
		t.Fatal(err)
	}
	h.restart(clk)

	// Slack thinks the first delivery was lost and sends it again to the
	// new process, whose memory is empty.
	if err := h.fake.Redeliver(env); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitCall(h.ctx, "conversations.replies", nil); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.onlyReply(m, r)
	if n := len(runs.Jobs()); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	if !strings.Contains(h.logs.String(), "already answered") {
		t.Fatalf("the redelivery was not recognised:\n%s", h.logs.String())
	}
}

// A message never answered (it had no code) and edited after a restart
// runs, with one lookup to make sure and one to recover its thread's
// session.
func TestEditAfterRestartOfAnUnansweredMessageAnswers(t *testing.T) {
	t.Parallel()
	h, clk := restartable(t, Config{EditWindow: DefaultEditWindow}, echo)
	ch := h.channel()
	m := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: h.user(), Text: "<@U0BOT> soon"})
	h.restart(clk)
	h.edit(m, "<@U0BOT> ```print(2)```")
	r := h.reply(m, "ran print(2)")
	h.settle()
	h.onlyReply(m, r)
	if n := len(h.lookups()); n != 2 {
		t.Fatalf("%d lookups, want 2", n)
	}
}

// A new message costs no lookup, even in the first minutes of a process
// (when its ts may be older than the process by the clocks' skew): only a
// delivery Slack marks as a retry can have been answered before.
func TestNewMessageRightAfterStartNeedsNoLookup(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	m := h.mention(h.channel(), h.user(), "```print(1)```")
	h.reply(m, "ran print(1)")
	h.settle()
	if n := len(h.lookups()); n != 0 {
		t.Fatalf("%d conversations.replies calls for a new message, want 0", n)
	}
}

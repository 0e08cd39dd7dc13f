// Package console is runblock's terminal adapter: it reads chat-like messages
// from a reader (a terminal or a pipe), runs their code blocks through the
// shared scheduler and prints each reply as the chat reply would read.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/handlers"
	"github.com/runblock/runblock/bots/internal/runerror"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Platform is the platform label the console reports to Metrics.
const Platform = "console"

// DefaultUser is the rate-limit key of console messages.
const DefaultUser = "console:local"

// DefaultMaxMessageBytes bounds one message when Config.MaxMessageBytes is 0.
const DefaultMaxMessageBytes = 2 << 20

// MessageBytes is the bound of one message for snippets of at most
// maxCodeBytes: a code block and its stdin block, each up to that, and
// room for the text around them.
func MessageBytes(maxCodeBytes int64) int { return int(2*maxCodeBytes + 64<<10) }

// Scheduler is the scheduler's configuration c for the console: one local
// user, whose messages run one after another, so no per-user rate (the
// chat users' rate would answer the sixth message of a piped file "Slow
// down").
func Scheduler(c executor.Config) executor.Config {
	c.UserRate = 0
	return c
}

// Metrics receives the console's observations; platform is "console".
type Metrics interface {
	MessageReceived(platform string)
	MessageReplied(platform string)
}

// Config configures the console adapter.
type Config struct {
	In  io.Reader // messages; closed by Close when it is an io.Closer
	Out io.Writer // replies
	// Interactive: In is a terminal, so print a banner, a prompt and the
	// queue progress. Piped input gets the replies only.
	Interactive bool
	// User is the scheduler's rate-limit key; "" means DefaultUser.
	User string
	// MaxMessageBytes bounds one message; 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// FilesDir is where the files of the runs are saved, each cell's in a
	// directory of its own (cell-1, cell-2, …; run-1, … without
	// sessions), and the whole output of a run whose view was cut beside
	// them (cell-1-output.txt); "" makes a fresh temporary directory at the
	// first run that needs one and after each reset (with FilesDir, the
	// cells after a reset write their numbers' directories again). The
	// reply names the paths.
	FilesDir string
	Render   formatting.RenderOptions
	Metrics  Metrics // nil: none counted
	// End, when set, ends the session's live process on %reset (the
	// executor's session manager); else a Submitter that has End(ctx, id)
	// does.
	End func(ctx context.Context, id string) error
	// NoSessions (RUNBLOCK_SESSIONS off): every message runs alone
	// instead of as the next cell of the console's one session.
	NoSessions bool
}

// Bot reads messages from Config.In, one at a time: a message is answered
// before the next one is read, so replies come out in order and the console
// user never has more than one job in the scheduler.
type Bot struct {
	cfg    Config
	runner executor.Submitter
	log    *slog.Logger

	out sync.Mutex // serialises writes to cfg.Out

	mu     sync.Mutex
	opened bool
	closed bool
	// handlers holds the message being answered; its context parents the
	// run, and Close drains it, then cancels.
	handlers *handlers.Group

	run struct { // the run in flight, for Interrupt
		sync.Mutex
		cancel context.CancelFunc // nil: none
	}

	ready atomic.Bool
	done  chan struct{}

	// runs counts the runs; filesDir is Config.FilesDir or the temporary
	// directory made for the session. Only the handler uses them.
	runs     int
	filesDir string

	// history is the record of the console's one session (history.go);
	// only the handler uses it.
	history history
}

// New returns a console Bot; it reads nothing until Open.
func New(cfg Config, runner executor.Submitter, logger *slog.Logger) *Bot {
	if cfg.User == "" {
		cfg.User = DefaultUser
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	logger = logger.With("adapter", Platform)
	return &Bot{
		cfg:      cfg,
		runner:   runner,
		log:      logger,
		handlers: handlers.New(1, logger),
		done:     make(chan struct{}),
		history:  newHistory(),
	}
}

// Open starts reading messages. It fails when there is nothing to read from
// or write to, or when called twice.
func (b *Bot) Open(ctx context.Context) error {
	if b.cfg.In == nil || b.cfg.Out == nil {
		return errors.New("console: no input or output")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opened {
		return errors.New("console: already open")
	}
	b.opened = true
	if b.cfg.Interactive {
		b.print("runblock console: paste a message with a ```python code block (or `inline` code) and end it with an empty line. Ctrl-D quits.\n\n")
	}
	b.ready.Store(true)
	go b.loop()
	return nil
}

// Ready reports whether the console is taking messages.
func (b *Bot) Ready() bool { return b.ready.Load() }

// Done is closed when the input has ended and every message read has been
// answered.
func (b *Bot) Done() <-chan struct{} { return b.done }

// Close stops taking messages and waits, until ctx ends, for the message in
// flight to be answered; then it cancels that run. A read blocked on an input
// that cannot be closed (a terminal) ends with the process.
func (b *Bot) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.handlers.Stop()
	b.ready.Store(false)
	if c, ok := b.cfg.In.(io.Closer); ok {
		if err := c.Close(); err != nil {
			b.log.Debug("closing console input", "err", err)
		}
	}
	if err := b.handlers.Close(ctx); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// Interrupt cancels the run in flight (a Ctrl-C at the terminal); its reply
// says so and shows the output so far. It reports whether a run was in
// flight.
func (b *Bot) Interrupt() bool {
	b.run.Lock()
	defer b.run.Unlock()
	if b.run.cancel == nil {
		return false
	}
	b.run.cancel()
	return true
}

// noMetrics is the Metrics of a Config without one.
type noMetrics struct{}

func (noMetrics) MessageReceived(string) {}
func (noMetrics) MessageReplied(string)  {}

func (b *Bot) loop() {
	defer close(b.done)
	defer b.ready.Store(false)
	r := bufio.NewReader(b.cfg.In)
	for {
		if b.cfg.Interactive {
			b.print("you> ")
		}
		msg, tooLarge, err := b.readMessage(r)
		if (msg != "" || tooLarge) && !b.handle(msg, tooLarge) {
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !b.isClosed() {
				b.log.Error("reading console input", "err", err)
			}
			if b.cfg.Interactive {
				b.print("\n")
			}
			return
		}
	}
}

func (b *Bot) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// readMessage reads one message: lines up to an empty line outside a code
// block (``` or ~~~, as Extract reads them), or to the end of the input.
// Leading empty lines are skipped. Past MaxMessageBytes the rest of the
// message is read and dropped, and tooLarge is set.
func (b *Bot) readMessage(r *bufio.Reader) (msg string, tooLarge bool, err error) {
	var sb strings.Builder
	var fences formatting.Fences
	droppedOpen := false // tooLarge: a block is open among the dropped lines
	for {
		line, long, err := readLine(r, b.cfg.MaxMessageBytes)
		if err != nil {
			return sb.String(), tooLarge, err
		}
		if !long && strings.TrimSpace(line) == "" {
			if sb.Len() == 0 && !tooLarge {
				continue
			}
			if tooLarge && !droppedOpen || !tooLarge && !fences.Open(sb.String()) {
				return sb.String(), tooLarge, nil
			}
		}
		sep := 0
		if sb.Len() > 0 {
			sep = 1
		}
		if tooLarge || long || sb.Len()+sep+len(line) > b.cfg.MaxMessageBytes {
			if !tooLarge {
				droppedOpen = fences.Open(sb.String())
			}
			// The text is no longer kept, so blocks are followed roughly: a
			// fence line, or a line with an odd number of ```, toggles.
			if togglesFence(line) {
				droppedOpen = !droppedOpen
			}
			tooLarge = true
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(line)
	}
}

// togglesFence reports whether a dropped line opens or closes a code block,
// roughly: it starts with ~~~ or holds an odd number of ```.
func togglesFence(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	return len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "~~~") || strings.Count(line, "```")%2 == 1
}

// readLine returns the next line without its line ending, keeping at most
// max bytes of it (long reports a cut). A last line without a newline is
// returned with a nil error, whatever its length; io.EOF comes on the
// following call.
func readLine(r *bufio.Reader, max int) (line string, long bool, err error) {
	var sb strings.Builder
	read := false
	for {
		frag, isPrefix, err := r.ReadLine()
		if err != nil {
			if read && errors.Is(err, io.EOF) {
				return sb.String(), long, nil
			}
			return sb.String(), long, err
		}
		read = true
		if sb.Len()+len(frag) > max {
			long = true
		} else {
			sb.Write(frag)
		}
		if !isPrefix {
			return sb.String(), long, nil
		}
	}
}

// handle answers one message; it reports false when the console is closed
// and the message was dropped.
func (b *Bot) handle(msg string, tooLarge bool) bool {
	return b.handlers.Do(func(ctx context.Context) {
		b.cfg.Metrics.MessageReceived(Platform)
		b.reply(b.answer(ctx, msg, tooLarge))
		b.cfg.Metrics.MessageReplied(Platform)
	})
}

func (b *Bot) answer(ctx context.Context, msg string, tooLarge bool) string {
	if tooLarge {
		b.log.Info("message too large", "limit_bytes", b.cfg.MaxMessageBytes)
		return formatting.RenderError(formatting.Console,
			executor.Errorf(executor.ErrTooLarge, "message over %d bytes", b.cfg.MaxMessageBytes))
	}
	if !b.cfg.NoSessions && isReset(msg) {
		return b.reset(ctx)
	}
	if path, ok := exportPath(msg); ok && !b.cfg.NoSessions {
		return b.export(path)
	}
	ext := formatting.Extract(msg, formatting.ExtractOptions{Platform: formatting.Console, Triggered: true})
	if !ext.Found {
		return formatting.RenderNotice(formatting.Console, ext.Notice())
	}

	var finished atomic.Bool
	job := executor.Job{
		User:    b.cfg.User,
		Request: executor.Request{Code: ext.Code, Stdin: ext.Stdin},
	}
	if !b.cfg.NoSessions {
		if b.history.full() {
			return fmt.Sprintf("This session has %d cells, the most it keeps: %s starts it fresh.", answer.MaxCells, resetCommand)
		}
		job.Request.Session = b.history.next()
	}
	if b.cfg.Interactive {
		job.Progress = func(p executor.Progress) {
			if p.State == executor.StateQueued && !finished.Load() {
				b.print(formatting.RenderProgress(formatting.Console, p) + "\n")
			}
		}
	}
	b.log.Debug("run submitted", "code_bytes", len(ext.Code), "stdin_bytes", len(ext.Stdin))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.run.Lock()
	b.run.cancel = cancel
	b.run.Unlock()
	res, err := b.runner.Submit(runCtx, job)
	b.run.Lock()
	b.run.cancel = nil
	b.run.Unlock()
	finished.Store(true)
	if err != nil {
		text, _ := runerror.Report(ctx, b.log, formatting.Console, err)
		if ctx.Err() == nil && runCtx.Err() != nil { // interrupted: show what it printed
			if out := strings.TrimRight(res.Stdout+res.Stderr, "\n"); out != "" {
				text += "\n" + out
			}
		}
		return text
	}
	b.log.Info("run finished", "outcome", res.Outcome(), "duration", res.Duration)
	opts := b.cfg.Render
	b.runs++
	name := "run-" + strconv.Itoa(b.runs)
	if !b.cfg.NoSessions {
		opts.Header, res = b.history.ran(job.Request, res)
		opts.Cell = b.history.cells
		name = "cell-" + strconv.Itoa(b.history.cells)
	}
	res.Files = append(formatting.ResultFiles(res), res.Files...) // its displayed images, saved as its files are
	r := formatting.RenderRun(formatting.Console, ext, res, opts)
	text := r.Text
	if len(res.Files) > 0 || r.Full != "" {
		saved, err := b.save(name, r.Full, res.Files)
		if err != nil {
			b.log.Error("saving the output or files of a run", "err", err)
			return text + "\nthe output or files of this run could not be saved: " + err.Error()
		}
		text += "\n" + saved
	}
	return text
}

// save writes the whole output of a run whose view was cut (full, "" when
// it was not) as NAME-output.txt, and its files into a directory NAME
// beside it, and lists their paths; name is the run's cell (cell-2) or,
// without sessions, the run (run-2).
func (b *Bot) save(run string, full string, files []executor.File) (string, error) {
	if b.filesDir == "" {
		dir := b.cfg.FilesDir
		if dir == "" {
			d, err := os.MkdirTemp("", "runblock-console-")
			if err != nil {
				return "", err
			}
			dir = d
		}
		b.filesDir = dir
	}
	var s strings.Builder
	if full != "" {
		if err := os.MkdirAll(b.filesDir, 0o755); err != nil {
			return "", err
		}
		p := filepath.Join(b.filesDir, run+"-output.txt")
		if err := os.WriteFile(p, []byte(full), 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&s, "whole output saved in %s", formatting.FileName(p))
		if len(files) == 0 {
			return s.String(), nil
		}
		s.WriteByte('\n')
	}
	dir := filepath.Join(b.filesDir, run)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	fmt.Fprintf(&s, "%s saved in %s:", plural(len(files), "file"), dir)
	for _, f := range files {
		if d := filepath.Dir(filepath.FromSlash(f.Path)); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
		}
		if err := root.WriteFile(filepath.FromSlash(f.Path), f.Content, 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&s, "\n  %s (%s, %d bytes)", formatting.FileName(filepath.Join(dir, filepath.FromSlash(f.Path))), f.MIME, len(f.Content))
	}
	return s.String(), nil
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func (b *Bot) reply(text string) {
	if b.cfg.Interactive {
		text = "runblock> " + text
	}
	b.print(strings.TrimRight(text, "\n") + "\n\n")
}

func (b *Bot) print(s string) {
	b.out.Lock()
	defer b.out.Unlock()
	if _, err := io.WriteString(b.cfg.Out, s); err != nil {
		b.log.Debug("writing console output", "err", err)
	}
}

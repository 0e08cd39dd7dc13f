package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/formatting/notebook"
	"github.com/runblock/runblock/internal/config"
)

// exitNotRun is exec's exit status when the snippet could not be run (a
// refusal, a missing input file), as timeout(1) and docker run exit 125
// when they fail themselves: apart from every status a snippet can have.
const exitNotRun = 125

// runExec is `runblock exec`: one snippet, straight to the executor, its
// whole output printed, and the snippet's status as the exit status (see
// exitStatus), so that scripts and CI can use it. With --json it prints
// exactly one JSON object whatever happens: the result, which carries the
// status, and exit 0; or {"error", "code"} when the run was refused or
// could not start, and exit non-zero.
func runExec(ctx context.Context, c *invocation, args []string) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	jsonOut := fs.Bool("json", false, "print the outcome as one JSON object")
	timeout := fs.Duration("timeout", 0, "time limit such as 5s (default RUNBLOCK_TIMEOUT)")
	memory := fs.String("memory", "", "memory limit such as 256MiB; a bare number is MiB (default RUNBLOCK_MEMORY)")
	stdinFile := fs.String("stdin", "", "file whose content is the snippet's standard input")
	var inputs []string
	fs.Func("file", "put this file into the snippet's work dir under its base name (repeatable)", func(p string) error {
		inputs = append(inputs, p)
		return nil
	})
	outDir := fs.String("out", "", "save the files the snippet made here (default: a fresh directory, named on output)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	// fail reports an outcome that is not a run result, as JSON when asked.
	fail := func(status int, code executor.Code, err error) int {
		if *jsonOut {
			_ = writeJSON(c.stdout, map[string]string{"error": err.Error(), "code": string(code)})
		} else {
			fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
		}
		return status
	}
	usageErr := func(msg string) int { return fail(2, "usage", errors.New(msg)) }
	if len(files) != 1 {
		return usageErr("give one FILE (a .ipynb notebook runs its code cells), or - for standard input")
	}
	if *timeout < 0 {
		return usageErr("--timeout must be positive, such as 5s")
	}
	req := executor.Request{Timeout: *timeout}
	if *memory != "" {
		n, err := config.ParseSize(*memory, 1<<20)
		if err != nil || n <= 0 {
			return usageErr(fmt.Sprintf("--memory %q: use a size such as 256MiB", *memory))
		}
		req.MemoryBytes = n
	}
	var nb *notebook.Notebook
	if strings.HasSuffix(files[0], ".ipynb") {
		b, err := readLimited(files[0], c.stdin, notebook.MaxBytes)
		if err != nil {
			return fail(exitNotRun, "input", err)
		}
		parsed, err := notebook.Parse([]byte(b))
		if err != nil {
			return fail(exitNotRun, executor.ErrInvalid, fmt.Errorf("%s: %w", files[0], err))
		}
		nb = &parsed
	} else if req.Code, err = readLimited(files[0], c.stdin, c.cfg.Executor.MaxCodeBytes); err != nil {
		return fail(exitNotRun, "input", err)
	}
	if *stdinFile != "" {
		if req.Stdin, err = readLimited(*stdinFile, c.stdin, c.cfg.Executor.MaxCodeBytes); err != nil {
			return fail(exitNotRun, "input", err)
		}
	}
	for _, p := range inputs {
		content, err := readLimited(p, c.stdin, c.cfg.Executor.MaxFilesBytes)
		if err != nil {
			return fail(exitNotRun, "input", err)
		}
		name, err := executor.CleanPath(filepath.Base(p))
		if err != nil {
			return fail(exitNotRun, executor.ErrorCode(err), err)
		}
		req.Files = append(req.Files, executor.File{Path: name, Size: int64(len(content)), Content: []byte(content)})
	}

	ec := c.cfg.Executor
	ec.Pool = 0
	ec.Logger = c.logger
	ex, err := sandbox.New(ctx, ec)
	if err != nil {
		return fail(exitNotRun, executor.ErrorCode(err), err)
	}
	defer ex.Close()
	if nb != nil {
		return execNotebook(ctx, c, ex, notebookRun{path: files[0], nb: *nb, req: req, json: *jsonOut, out: *outDir, fail: fail})
	}
	res, err := ex.Run(ctx, req)
	if err != nil {
		return fail(exitNotRun, executor.ErrorCode(err), err)
	}
	if *jsonOut {
		if err := writeJSON(c.stdout, res); err != nil {
			fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
			return 1
		}
		return 0
	}
	printResult(c.stdout, res, 0)
	if err := saveFiles(c.stdout, *outDir, res); err != nil {
		fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
		return 1
	}
	return exitStatus(res)
}

// printResult prints a run as the console renders it, whole: its
// displays where they were shown among its output, its value after it,
// labelled Out[cell] when it is a notebook's cell.
func printResult(w io.Writer, res executor.Result, cell int) {
	whole := formatting.RenderOptions{MaxLines: math.MaxInt, MaxChars: math.MaxInt, Cell: cell}
	fmt.Fprintln(w, strings.TrimRight(formatting.Render(formatting.Console, res, whole).Text, "\n"))
}

// Exit statuses of plain exec for runs the sandbox ended, as timeout(1)
// and snekbox give them.
const (
	exitTimeout = 124 // timeout(1)
	exitMemory  = 137 // 128+SIGKILL, as snekbox
)

// exitStatus is plain exec's exit status for a finished run: the snippet's
// own (1 for an uncaught exception, N for SystemExit(N)), exitTimeout or
// exitMemory when the sandbox stopped it for its limits, 128 plus the
// signal's number for a snippet killed by a signal, and 1 for any other
// failure that left no status of its own (the output limit).
func exitStatus(res executor.Result) int {
	switch {
	case res.Timeout:
		return exitTimeout
	case res.MemoryExceeded:
		return exitMemory
	case res.Signal != "" && !res.OutputLimit:
		if n := unix.SignalNum(res.Signal); n != 0 {
			return 128 + int(n)
		}
		return 1
	case res.ExitCode > 0:
		return res.ExitCode
	case !res.Success:
		return 1
	}
	return 0
}

// saveFiles writes the run's files under dir (a fresh directory when "")
// and lists them, with those that did not come back.
func saveFiles(w io.Writer, dir string, res executor.Result) error {
	if len(res.Files) == 0 && len(res.FilesOmitted) == 0 {
		return nil
	}
	if len(res.Files) > 0 {
		var err error
		if dir == "" {
			dir, err = os.MkdirTemp("", "runblock-files-")
		} else {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			return err
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer root.Close()
		fmt.Fprintf(w, "files saved in %s:\n", dir)
		for _, f := range res.Files {
			if d := filepath.Dir(f.Path); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if err := root.WriteFile(f.Path, f.Content, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(w, "  %s (%s, %d bytes)\n", formatting.FileName(f.Path), f.MIME, f.Size)
		}
	}
	for _, f := range res.FilesOmitted {
		fmt.Fprintf(w, "  not returned: %s (%s)\n", formatting.FileName(f.Path), f.Reason)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// readLimited reads path ("-": r), reading at most one byte past max so
// that the executor can refuse an oversized snippet or input.
func readLimited(path string, r io.Reader, max int64) (string, error) {
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return string(b), nil
}

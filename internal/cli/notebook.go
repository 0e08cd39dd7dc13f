package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting/notebook"
)

// notebookRun is `runblock exec notebook.ipynb`: the notebook, the
// request its first cell takes its limits, stdin and files from, and the
// flags.
type notebookRun struct {
	path string
	nb   notebook.Notebook
	req  executor.Request
	json bool
	out  string
	fail func(status int, code executor.Code, err error) int
}

// sessionStarter starts a live session (the sandbox's Executor).
type sessionStarter interface {
	StartSession(ctx context.Context) (executor.LiveSession, error)
}

// execNotebook runs the notebook's code cells in order as one session,
// as Jupyter's "Run All" does: up to the first that fails. It prints
// each cell's output under "[n]" (with --json, {"cells": [result, ...]}),
// saves the files the cells made and, with --out, writes the executed
// notebook there. The exit status is the failed cell's, or 0.
func execNotebook(ctx context.Context, c *invocation, ex sessionStarter, nr notebookRun) int {
	s, err := ex.StartSession(ctx)
	if err != nil {
		return nr.fail(exitNotRun, executor.ErrorCode(err), err)
	}
	defer func() { _ = s.Close() }()
	cells := append([]notebook.Cell(nil), nr.nb.Cells...)
	var results []executor.Result
	var ran []int // the cells that ran, by index
	var all executor.Result
	status := 0
	for i := range cells {
		if cells[i].Kind != notebook.Code || status != 0 {
			continue
		}
		req := nr.req
		req.Code = cells[i].Source
		if len(results) > 0 {
			req.Stdin, req.Files = "", nil
		}
		res, err := s.Run(ctx, req)
		if err != nil {
			return nr.fail(exitNotRun, executor.ErrorCode(err), fmt.Errorf("cell %d: %w", len(results)+1, err))
		}
		results = append(results, res)
		ran = append(ran, i)
		all.Files = append(all.Files, res.Files...)
		all.FilesOmitted = append(all.FilesOmitted, res.FilesOmitted...)
		if !nr.json {
			fmt.Fprintf(c.stdout, "[%d]\n", len(results))
			printResult(c.stdout, res, len(results))
		}
		status = exitStatus(res)
	}
	for k, i := range ran {
		cells[i].Count, cells[i].Result = k+1, &results[k]
	}
	if nr.json {
		if err := writeJSON(c.stdout, map[string][]executor.Result{"cells": results}); err != nil {
			fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
			return 1
		}
	}
	if nr.out != "" {
		target := filepath.Join(nr.out, notebookName(nr.out, nr.path))
		if err := writeNotebook(target, cells); err != nil {
			fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
			return 1
		}
		if !nr.json {
			fmt.Fprintf(c.stdout, "notebook saved as %s\n", target)
		}
	}
	if !nr.json {
		if err := saveFiles(c.stdout, nr.out, all); err != nil {
			fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
			return 1
		}
	}
	return status
}

// writeNotebook writes cells as the executed notebook at target.
func writeNotebook(target string, cells []notebook.Cell) error {
	b, err := notebook.Write(cells)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return os.WriteFile(target, b, 0o644)
}

// notebookName is the executed notebook's name in dir: the input's,
// unless that is the input itself.
func notebookName(dir, path string) string {
	name := filepath.Base(path)
	if path == "-" {
		return "notebook.ipynb"
	}
	in, err1 := os.Stat(path)
	out, err2 := os.Stat(filepath.Join(dir, name))
	if err1 == nil && err2 == nil && os.SameFile(in, out) {
		return strings.TrimSuffix(name, ".ipynb") + "-executed.ipynb"
	}
	return name
}

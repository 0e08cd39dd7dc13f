package answer

import (
	"context"
	"log/slog"
	"slices"

	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/bots/internal/runerror"
	"github.com/runblock/runblock/bots/internal/turns"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Run runs ex's code with the files of its message for user, in turn
// (nil: no place to keep), and renders the result; progress, when not nil,
// gets the run's place in the queue. A run the scheduler refused or could
// not finish comes back as its friendly line with no Reaction (runerror
// decides what is logged).
func (f *Flow[S]) Run(ctx context.Context, log *slog.Logger, turn *turns.Turn, user string, ex formatting.Extraction, files []attach.Source, progress func(executor.Progress)) Reply {
	in, skipped := f.fetch(ctx, log, files)
	res, err := turn.Submit(ctx, f.cfg.Runner, executor.Job{
		User:     user,
		Request:  executor.Request{Code: ex.Code, Stdin: ex.Stdin, Files: in, Colour: f.cfg.Colour},
		Progress: progress,
	})
	if err != nil {
		text, private := runerror.Report(ctx, log.With("user", user), f.cfg.Platform, err)
		return Reply{Text: text, Private: private}
	}
	return f.render(ex, res, skipped, "", 0)
}

// render renders res within the platform's files a reply, header first,
// the images it displayed (formatting.ResultFiles) before its files;
// the files over MaxFiles are named instead, the last ones first. cell is
// the number of a session's cell, 0 for a run alone.
func (f *Flow[S]) render(ex formatting.Extraction, res executor.Result, skipped []executor.OmittedFile, header string, cell int) Reply {
	p := f.cfg.Platform
	opts := f.cfg.Render
	opts.Skipped, opts.Header, opts.Cell = skipped, header, cell
	if shown := formatting.ResultFiles(res); len(shown) > 0 {
		res.Files = append(shown, res.Files...)
	}
	r := formatting.RenderRun(p, ex, res, opts)
	if room := f.cfg.MaxFiles - len(res.Files); f.cfg.MaxFiles > 0 && (r.Full != "" && room < 1 || room < 0) {
		keep := min(len(res.Files), f.cfg.MaxFiles)
		if r.Full != "" {
			keep--
		}
		res.Files, res.FilesOmitted = res.Files[:keep], append(omit(res.Files[keep:], f.cfg.OverMaxFiles), res.FilesOmitted...)
		r = formatting.RenderRun(p, ex, res, opts)
	}
	out := Reply{Text: r.Text, Full: r.Full, Files: res.Files, Tables: r.Tables, Reaction: r.Reaction(p), outcome: res.Outcome(), took: res.Duration}
	if len(res.Files) > 0 && f.cfg.TooLarge != "" {
		// without is the reply without the files over names instead.
		without := func(over func(executor.File) bool) Reply {
			res := res
			var keep, drop []executor.File
			for _, file := range res.Files {
				if over(file) {
					drop = append(drop, file)
				} else {
					keep = append(keep, file)
				}
			}
			res.Files, res.FilesOmitted = keep, append(omit(drop, f.cfg.TooLarge), res.FilesOmitted...)
			r := formatting.RenderRun(p, ex, res, opts)
			return Reply{Text: r.Text, Full: r.Full, Files: keep, Tables: r.Tables, Reaction: r.Reaction(p), outcome: out.outcome, took: out.took}
		}
		fallback := without(func(executor.File) bool { return true })
		out.Fallback = &fallback
		out.fit = func(limit int64) (Reply, bool) {
			over := func(file executor.File) bool { return int64(len(file.Content)) > limit }
			if !slices.ContainsFunc(res.Files, over) {
				return Reply{}, false
			}
			fit := without(over)
			fit.Fallback = &fallback
			return fit, true
		}
	}
	return out
}

// Fit returns the reply with only its files of at most limit bytes (a
// platform's per-file upload limit), the others named instead with
// Config.TooLarge, and whether any file was over the limit: a platform
// that refused the upload as too large tries it, then Fallback.
func (r Reply) Fit(limit int64) (Reply, bool) {
	if r.fit == nil {
		return Reply{}, false
	}
	return r.fit(limit)
}

// omit names files as left out for reason.
func omit(files []executor.File, reason string) []executor.OmittedFile {
	out := make([]executor.OmittedFile, 0, len(files))
	for _, f := range files {
		out = append(out, executor.OmittedFile{Path: f.Path, Size: f.Size, Reason: reason})
	}
	return out
}

// fetch downloads the message's files for the run, within the caps.
func (f *Flow[S]) fetch(ctx context.Context, log *slog.Logger, files []attach.Source) ([]executor.File, []executor.OmittedFile) {
	if len(files) == 0 {
		return nil, nil
	}
	fetch := f.cfg.Fetch
	fetch.Log = log
	return fetch.Fetch(ctx, files)
}

package sandbox

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// finishFiles turns what the collector read into the run's files: input
// files that came back unchanged are dropped, the caps applied in order
// (what is over them is named in FilesOmitted), and each file gets a MIME
// type.
func finishFiles(res *executor.Result, in []executor.File, got []executor.File, omitted []executor.OmittedFile, maxFiles int, maxBytes int64) {
	var total int64
	res.Files, res.FilesOmitted = []executor.File{}, nil
	for _, f := range got {
		if slices.ContainsFunc(in, func(i executor.File) bool { return i.Path == f.Path && bytes.Equal(i.Content, f.Content) }) {
			continue
		}
		f.Size = int64(len(f.Content))
		switch {
		case len(res.Files) >= maxFiles:
			res.FilesOmitted = append(res.FilesOmitted, executor.OmittedFile{Path: f.Path, Size: f.Size, Reason: executor.OmitCount})
		case total+f.Size > maxBytes:
			res.FilesOmitted = append(res.FilesOmitted, executor.OmittedFile{Path: f.Path, Size: f.Size, Reason: executor.OmitSize})
		default:
			total += f.Size
			f.MIME = detectMIME(f.Path, f.Content)
			res.Files = append(res.Files, f)
		}
	}
	res.FilesOmitted = append(res.FilesOmitted, omitted...)
}

// detectMIME types a file by its extension, else by its content (the
// WHATWG sniffing of net/http), so "plot.png" and "data.csv" are what
// their names say and a nameless blob gets a safe guess.
func detectMIME(name string, content []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return http.DetectContentType(content)
}

// checkFiles validates a request's input files against the caps and the
// input-file rules (executor.CheckInputPaths), and cleans nothing.
func checkFiles(files []executor.File, maxFiles int, maxBytes int64) error {
	if len(files) > maxFiles {
		return executor.Errorf(executor.ErrTooLarge, "%d input files, over the limit of %d", len(files), maxFiles)
	}
	paths := make([]string, len(files))
	var total int64
	for i, f := range files {
		paths[i] = f.Path
		total += int64(len(f.Content))
	}
	if err := executor.CheckInputPaths(paths); err != nil {
		return err
	}
	for i, p := range paths {
		if p == policy.ShmDir || strings.HasPrefix(p, policy.ShmDir+"/") {
			pe := &executor.PathError{Index: i, Path: p, Reason: "is reserved: " + policy.ShmDir + " is the shared memory directory of the work dir"}
			return &executor.Error{Code: executor.ErrInvalid, Message: pe.Error(), Err: pe}
		}
	}
	if total > maxBytes {
		return executor.Errorf(executor.ErrTooLarge, "input files are %d bytes, over the limit of %d", total, maxBytes)
	}
	return nil
}

// encodeRequest is what goes down the request pipe (see protocol.go and
// guard.py's _runblock_unpack): a header with the request's flags, the
// code, the arguments, the input files; a launched request's first
// argument is its mode (guard.py's _runblock_launch runs it).
func encodeRequest(req executor.Request) []byte {
	var b bytes.Buffer
	flags := 0
	if req.Colour {
		flags |= protocol.RequestColour
	}
	if !req.Script {
		flags |= protocol.RequestCell
	}
	args := req.Args
	if req.Launch != "" {
		flags |= protocol.RequestLaunch
		args = append([]string{string(req.Launch)}, args...)
	}
	fmt.Fprintf(&b, "%d %d %d %d\n%s", len(req.Code), len(args), len(req.Files), flags, req.Code)
	for _, a := range args {
		b.WriteString(strconv.Itoa(len(a)) + "\n" + a)
	}
	for _, f := range req.Files {
		fmt.Fprintf(&b, "%d %d\n%s", len(f.Path), len(f.Content), f.Path)
		b.Write(f.Content)
	}
	return b.Bytes()
}

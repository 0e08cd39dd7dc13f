package sandbox

import (
	"bytes"
	"cmp"
	"fmt"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
)

// collectDepth bounds how deep the collector reads files in the work dir;
// those deeper are named with executor.OmitTooDeep.
const collectDepth = 16

// scratch reports whether a work dir name stays behind (see policy).
func scratch(name string) bool {
	return slices.ContainsFunc(policy.ScratchPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// candidate is a regular file found in the work dir, not yet read.
type candidate struct {
	path  string // as it comes back (see shownNames)
	raw   string // as it is named in the work dir
	size  int64
	mtime int64 // ns
}

// shownNames gives each of the names of one directory the name it comes
// back under: itself where it is UTF-8, else with each invalid byte
// written \xNN (a path is a JSON string, which would turn every invalid
// byte into U+FFFD, and two names into one). A name that then equals
// another gets "~2" (or the next free number) appended, so every path
// that comes back is unique, and a UTF-8 name is always itself.
func shownNames(names []string) map[string]string {
	shown := make(map[string]string, len(names))
	taken := make(map[string]bool, len(names))
	for _, name := range names {
		if utf8.ValidString(name) {
			shown[name], taken[name] = name, true
		}
	}
	for _, name := range names {
		if _, ok := shown[name]; ok {
			continue
		}
		s := escapeInvalid(name)
		for n := 2; taken[s]; n++ {
			s = escapeInvalid(name) + "~" + strconv.Itoa(n)
		}
		shown[name], taken[s] = s, true
	}
	return shown
}

// escapeInvalid writes each byte of s that is not part of UTF-8 as \xNN.
func escapeInvalid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// byAppearance orders files as they appeared: by modification time, then
// by name.
func byAppearance(a, b candidate) int {
	return cmp.Or(cmp.Compare(a.mtime, b.mtime), strings.Compare(a.path, b.path))
}

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

// encodeRequest is what goes down the request pipe (see guard.py's
// _runblock_unpack): a header, the code, the arguments, the input files.
func encodeRequest(req executor.Request) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %d %d\n%s", len(req.Code), len(req.Args), len(req.Files), req.Code)
	for _, a := range req.Args {
		b.WriteString(strconv.Itoa(len(a)) + "\n" + a)
	}
	for _, f := range req.Files {
		fmt.Fprintf(&b, "%d %d\n%s", len(f.Path), len(f.Content), f.Path)
		b.Write(f.Content)
	}
	return b.Bytes()
}

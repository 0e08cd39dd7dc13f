//go:build linux

package sandbox

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// The file tests of issue 20's item 7, on both paths (bothPaths).

// filesByPath maps a result's files by path.
func filesByPath(res executor.Result) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range res.Files {
		m[f.Path] = f.Content
	}
	return m
}

// TestOpenFilesClosedAtExit: what the snippet wrote through files it left
// open comes back whole, wherever it held them (builtins, a module, a
// cycle), of the io module's classes or its own, ending well or with an
// exception: buffered data flushed, a gzip and a zip file closed with their
// trailers.
func TestOpenFilesClosedAtExit(t *testing.T) {
	bothPaths(t, testOpenFilesClosedAtExit)
}

func testOpenFilesClosedAtExit(t *testing.T, path Config) {
	e := newHardened(t, path)
	const code = `import builtins, gzip, io, os, sys, zipfile
builtins.held = open("on_builtins.txt", "w")
held.write("builtins")
sys.held = open("on_sys.bin", "wb", buffering=1 << 16)
sys.held.write(b"sys")
cycle = [open("in_cycle.txt", "w")]
cycle.append(cycle)
cycle[0].write("cycle")
os.held = gzip.open("data.gz", "wt")
os.held.write("gzipped")
builtins.z = zipfile.ZipFile("a.zip", "w")
builtins.z.writestr("in.txt", "zipped")
class Log(io.TextIOWrapper): pass
builtins.log = Log(open("subclass.txt", "wb"))
log.write("subclass")
print("wrote")
`
	// A daemon thread blocked reading holds its file's lock: closing that
	// file would wait for ever; nothing it reads needs closing.
	const reader = "import threading\nr, w = os.pipe()\nthreading.Thread(target=os.fdopen(r, 'rb').read, daemon=True).start()\n"
	for _, tt := range []struct{ name, end string }{
		{"success", ""}, {"exception", "raise ValueError('end')\n"}, {"daemon thread reading", reader},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := runCode(t, e, executor.Request{Code: code + tt.end, Timeout: 3 * time.Second})
			if res.Stdout != "wrote\n" || res.Timeout {
				t.Fatalf("stdout=%q timeout=%v stderr=%s", res.Stdout, res.Timeout, res.Stderr)
			}
			got := filesByPath(res)
			for name, want := range map[string]string{"on_builtins.txt": "builtins", "on_sys.bin": "sys", "in_cycle.txt": "cycle", "subclass.txt": "subclass"} {
				if string(got[name]) != want {
					t.Errorf("%s: %q, want %q", name, got[name], want)
				}
			}
			if gz, err := gzip.NewReader(bytes.NewReader(got["data.gz"])); err != nil {
				t.Errorf("data.gz (%d bytes): %v", len(got["data.gz"]), err)
			} else if b, err := io.ReadAll(gz); err != nil || string(b) != "gzipped" {
				t.Errorf("data.gz holds %q: %v", b, err)
			}
			if zr, err := zip.NewReader(bytes.NewReader(got["a.zip"]), int64(len(got["a.zip"]))); err != nil || len(zr.File) != 1 {
				t.Errorf("a.zip (%d bytes): %v", len(got["a.zip"]), err)
			} else if f, err := zr.File[0].Open(); err != nil {
				t.Errorf("a.zip: %v", err)
			} else if b, _ := io.ReadAll(f); string(b) != "zipped" {
				t.Errorf("a.zip's in.txt holds %q", b)
			}
		})
	}
}

// TestCollectedPathsNamedAndUnique: a file more than 16 directories deep
// is named as omitted (it was dropped silently); names that differ only in
// bytes that are not UTF-8 come back as distinct paths, with those bytes
// written \xNN (they came back as one path, U+FFFD for each), one that
// then equals a real name disambiguated; a UTF-8 name is never changed.
func TestCollectedPathsNamedAndUnique(t *testing.T) {
	bothPaths(t, testCollectedPathsNamedAndUnique)
}

func testCollectedPathsNamedAndUnique(t *testing.T, path Config) {
	e := newHardened(t, path)
	res := runCode(t, e, executor.Request{Code: `import os
deep = "/".join("d%d" % i for i in range(20))
os.makedirs(deep)
for n in (15, 16, 17):
    with open("/".join(deep.split("/")[:n]) + "/at%d.txt" % n, "w") as f:
        f.write("at %d" % n)
for name, data in ((b"a\xff", b"one"), (b"a\xfe", b"two"), (b"a\\xff", b"literal"), (b"sub\xff", None)):
    if data is None:
        os.mkdir(name)
        name += b"/f\xff"
        data = b"three"
    with open(name, "wb") as f:
        f.write(data)
print("made")`})
	if res.Stdout != "made\n" {
		t.Fatalf("stdout=%q stderr=%s", res.Stdout, res.Stderr)
	}
	got := map[string]string{}
	for _, f := range res.Files {
		if _, dup := got[f.Path]; dup {
			t.Errorf("path %q comes back twice", f.Path)
		}
		got[f.Path] = string(f.Content)
	}
	deep := "d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/"
	want := map[string]string{
		`a\xff`: "literal", `a\xff~2`: "one", `a\xfe`: "two", `sub\xff/f\xff`: "three",
		"d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/at15.txt": "at 15", deep + "at16.txt": "at 16",
	}
	if len(got) != len(want) {
		t.Errorf("files %q, want %q", got, want)
	}
	for p, content := range want {
		if got[p] != content {
			t.Errorf("%q holds %q, want %q", p, got[p], content)
		}
	}
	tooDeep := executor.OmittedFile{Path: deep + "d16/at17.txt", Size: 5, Reason: executor.OmitTooDeep}
	if len(res.FilesOmitted) != 1 || res.FilesOmitted[0] != tooDeep {
		t.Errorf("omitted %+v, want %+v", res.FilesOmitted, tooDeep)
	}
}

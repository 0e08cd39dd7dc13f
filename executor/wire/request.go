package wire

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/runblock/runblock/executor"
)

// MaxInputFiles bounds the input files of one request, in every front.
const MaxInputFiles = 100

// Limits are a server's caps on what a request may ask for, the same in
// every front (the native, snekbox and Piston endpoints, MCP over HTTP
// and standard input).
type Limits struct {
	// Timeout and MemoryBytes are a request's default and the most it
	// may ask for.
	Timeout     time.Duration
	MemoryBytes int64
	// MaxCodeBytes caps code, stdin and input files of a request together
	// (0: no cap of the front's own; the sandbox still has its limits).
	MaxCodeBytes int64
}

// BodyBytes caps the body of a request over HTTP: the code, stdin and
// files, JSON-escaped (up to 6 bytes a byte for control characters), plus
// room for the rest; 0 (no cap) without MaxCodeBytes.
func (l Limits) BodyBytes() int64 {
	if l.MaxCodeBytes <= 0 {
		return 0
	}
	return 6*l.MaxCodeBytes + 64<<10
}

// Program is a front's decoded request, before Limits.Request checks it.
type Program struct {
	// Launch and Code are executor.Request's: a snippet (Launch empty),
	// or code, a file or a module run as python would. LaunchCode with
	// neither files nor arguments is a snippet.
	Launch executor.Launch
	Code   string
	// Args are sys.argv[1:].
	Args  []string
	Stdin string
	Files []File
	// Field prefixes the fields that errors name (a replayed cell's
	// "replay[2]."); FilePath names a file's path field, "path" when
	// empty (Piston's and MCP's is "name").
	Field    string
	FilePath string
	// Timeout and MemoryBytes are what the request asks for (0: the
	// server's limit).
	Timeout     time.Duration
	MemoryBytes int64
	// Colour and Script are executor.Request's.
	Colour bool
	Script bool
}

// invalid is a client's mistake in a request.
func invalid(format string, args ...any) *executor.Error {
	return executor.Errorf(executor.ErrInvalid, format, args...)
}

// Request checks p against l and turns it into an executor.Request: its
// timeout and memory capped to l's, its files decoded. Its errors are the
// client's mistakes: *executor.Error with ErrInvalid (bad fields, too
// many files, bad encodings) or ErrTooLarge (over MaxCodeBytes).
func (l Limits) Request(p Program) (executor.Request, error) {
	switch {
	case p.Timeout < 0:
		return executor.Request{}, invalid("field %q must be a positive number of seconds, 0 for the server's limit", p.Field+"timeout")
	case p.MemoryBytes < 0:
		return executor.Request{}, invalid("field %q must be a number of bytes, 0 for the server's limit", p.Field+"memory")
	case len(p.Files) > MaxInputFiles:
		return executor.Request{}, invalid("%d files, over the limit of %d", len(p.Files), MaxInputFiles)
	}
	pathField := p.FilePath
	if pathField == "" {
		pathField = "path"
	}
	paths := make([]string, len(p.Files))
	for i, f := range p.Files {
		paths[i] = f.Path
	}
	if err := executor.CheckInputPaths(paths); err != nil {
		var pe *executor.PathError
		if errors.As(err, &pe) {
			return executor.Request{}, invalid("%sfiles[%d].%s: %s", p.Field, pe.Index, pathField, pe.Error())
		}
		return executor.Request{}, err
	}
	req := executor.Request{
		Code: p.Code, Stdin: p.Stdin, Args: p.Args, Launch: p.Launch,
		Timeout: min(p.Timeout, l.Timeout), MemoryBytes: min(p.MemoryBytes, l.MemoryBytes),
		Colour: p.Colour, Script: p.Script,
	}
	// A launched file's or module's Code is a name: its source is a file.
	n := int64(len(p.Stdin))
	if p.Launch == "" || p.Launch == executor.LaunchCode {
		n += int64(len(p.Code))
	}
	for i, f := range p.Files {
		data, err := f.Decode()
		if err != nil {
			return executor.Request{}, invalid("%sfiles[%d].content: %v", p.Field, i, err)
		}
		n += int64(len(data))
		req.Files = append(req.Files, executor.File{Path: f.Path, Size: int64(len(data)), Content: data})
	}
	if l.MaxCodeBytes > 0 && n > l.MaxCodeBytes {
		return executor.Request{}, executor.Errorf(executor.ErrTooLarge,
			"code, stdin and files are %d bytes, over the limit of %d bytes", n, l.MaxCodeBytes)
	}
	if req.Launch == executor.LaunchCode && len(req.Files) == 0 && len(req.Args) == 0 {
		req.Launch = ""
	}
	return req, nil
}

// Decode is the file's content, decoded as its Encoding says.
func (f File) Decode() ([]byte, error) {
	switch f.Encoding {
	case "", "utf8", "utf-8", "text":
		return []byte(f.Content), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, errors.New("not valid base64")
		}
		return b, nil
	case "hex":
		b, err := hex.DecodeString(f.Content)
		if err != nil {
			return nil, errors.New("not valid hex")
		}
		return b, nil
	}
	return nil, fmt.Errorf("encoding %q is not supported: use \"text\" (the default) or \"base64\"", f.Encoding)
}

// Seconds is a timeout given as a number of seconds, as MCP and Piston
// (in milliseconds, scaled) take it: NaN and infinities are refused as
// negative numbers are.
func Seconds(s float64) time.Duration {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
		return -1
	}
	return time.Duration(s * float64(time.Second))
}

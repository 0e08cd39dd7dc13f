// Package attach brings the files attached to a chat message into a run:
// it names them safely, keeps them within the executor's caps and
// downloads them with bounded size and time. What does not go in is
// returned, to be named in the reply (formatting.FilesNote), never dropped
// silently.
package attach

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/runblock/runblock/executor"
)

// The executor's default caps (RUNBLOCK_MAX_FILES, RUNBLOCK_MAX_FILES_BYTES),
// which also bound the files that go in.
const (
	DefaultMaxFiles = 10
	DefaultMaxBytes = 8 << 20
)

// downloadTimeout bounds one download.
const downloadTimeout = 30 * time.Second

// maxName bounds a file name, in bytes.
const maxName = 255

// Why an attachment did not go in (executor.OmittedFile.Reason).
const (
	ReasonCount        = "over the file count limit"
	ReasonSize         = "over the total size limit"
	ReasonUnavailable  = "not downloadable"
	ReasonFailed       = "download failed"
	ReasonUntrustedURL = "not a file of this workspace"
)

// Limits are the caps on the files of one run. Zero fields take the
// defaults; a negative Files lets no file in.
type Limits struct {
	Files int
	Bytes int64
}

func (l Limits) withDefaults() Limits {
	if l.Files == 0 {
		l.Files = DefaultMaxFiles
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultMaxBytes
	}
	return l
}

// Source is an attachment as the platform describes it.
type Source struct {
	Name string
	Size int64 // from the platform's metadata; 0 when unknown
	MIME string
	URL  string // "" when the platform offers no download
	// Header, when set, is sent with its download in place of
	// Fetcher.Header (the token of the workspace it came from).
	Header http.Header
}

// Fetcher downloads attachments.
type Fetcher struct {
	Client *http.Client // nil: http.DefaultClient
	// Header is sent with each download to a host Trusted accepts (the
	// bot token for Slack); nil Trusted accepts every host.
	Header  http.Header
	Trusted func(*url.URL) bool
	Limits  Limits
	Log     *slog.Logger
}

// Fetch downloads srcs, in order, as the files of a run: under safe,
// distinct names, at most Limits.Files of them and Limits.Bytes in total.
// The rest is returned as omitted, with the reason.
func (f Fetcher) Fetch(ctx context.Context, srcs []Source) ([]executor.File, []executor.OmittedFile) {
	lim := f.Limits.withDefaults()
	var files []executor.File
	var omitted []executor.OmittedFile
	names := map[string]bool{}
	var total int64
	for _, src := range srcs {
		name := unique(names, Name(src.Name))
		skip := func(reason string) {
			omitted = append(omitted, executor.OmittedFile{Path: name, Size: src.Size, Reason: reason})
		}
		switch {
		case lim.Files < 0 || len(files) >= lim.Files:
			skip(ReasonCount)
			continue
		case src.Size > lim.Bytes-total:
			skip(ReasonSize)
			continue
		case src.URL == "":
			skip(ReasonUnavailable)
			continue
		}
		content, over, err := f.download(ctx, src, lim.Bytes-total)
		switch {
		case over:
			skip(ReasonSize)
			continue
		case err != nil:
			if f.Log != nil {
				f.Log.Warn("downloading an attached file", "file", name, "err", err)
			}
			reason := ReasonFailed
			if errors.Is(err, errUntrusted) {
				reason = ReasonUntrustedURL
			}
			skip(reason)
			continue
		}
		names[name] = true
		total += int64(len(content))
		files = append(files, executor.File{Path: name, Size: int64(len(content)), MIME: src.MIME, Content: content})
	}
	return files, omitted
}

var errUntrusted = errors.New("attachment url on an untrusted host")

// download gets src, reading at most limit bytes; over reports that there
// was more.
func (f Fetcher) download(ctx context.Context, src Source, limit int64) (content []byte, over bool, err error) {
	rawURL := src.URL
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, false, fmt.Errorf("attachment url %q is not http(s)", rawURL)
	}
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, false, err
	}
	header := f.Header
	if src.Header != nil {
		header = src.Header
	}
	if header != nil {
		if f.Trusted != nil && !f.Trusted(u) {
			return nil, false, errUntrusted
		}
		for k, v := range header {
			req.Header[k] = v
		}
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("attachment download: %s", resp.Status)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/html" && !strings.HasPrefix(src.MIME, "text/html") {
		// Slack answers a download it does not authorize (no files:read)
		// with its sign-in page, and a 200.
		return nil, false, fmt.Errorf("attachment download answered with a web page, not the file (is the token allowed to read files?)")
	}
	if resp.ContentLength > limit {
		return nil, true, nil
	}
	content, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(content)) > limit {
		return nil, true, nil
	}
	return content, false, nil
}

// Name makes an attachment's name a safe file name in the run's work dir:
// its base name only (no directories, no "." or ".."), no control
// characters, at most 255 bytes with the extension kept; "file" when
// nothing is left.
func Name(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base("/" + name)
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '/' {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if strings.Trim(name, ".") == "" {
		return "file"
	}
	if len(name) > maxName {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		name = truncate(strings.TrimSuffix(name, ext), maxName-len(ext)) + ext
	}
	return name
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// unique returns name, or "stem-2.ext", "stem-3.ext"… when taken.
func unique(taken map[string]bool, name string) string {
	if !taken[name] {
		return name
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 2; ; i++ {
		suffix := "-" + strconv.Itoa(i) + ext
		n := truncate(stem, maxName-len(suffix)) + suffix
		if !taken[n] {
			return n
		}
	}
}

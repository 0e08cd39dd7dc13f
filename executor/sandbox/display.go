package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// mimeType is what a display's MIME type may be.
var mimeType = regexp.MustCompile(`^[a-z]+/[A-Za-z0-9.+_-]+$`)

// readDisplays reads n displays (see protocol.go's Rich output) from r,
// checking every count and size against its bounds before it reads what
// they announce.
func readDisplays(r *bufio.Reader, n int64) ([]executor.Display, error) {
	left := int64(protocol.DisplaysMax)
	var out []executor.Display
	for range n {
		head, err := readFields(r)
		if err != nil {
			return nil, err
		}
		if len(head) != 3 || (head[1] != "0" && head[1] != "1") {
			return nil, errBadEnd("a display's line")
		}
		entries, err1 := count(head[0], protocol.DisplayMIMEMax)
		at, err2 := count(head[2], 1<<62)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		d := executor.Display{Data: make(map[string]string, entries), Value: head[1] == "1", At: at}
		for range entries {
			f, err := readFields(r)
			if err != nil {
				return nil, err
			}
			if len(f) != 2 {
				return nil, errBadEnd("a display's entry")
			}
			nMIME, err1 := count(f[0], 255)
			nData, err2 := count(f[1], left)
			if err := errors.Join(err1, err2); err != nil {
				return nil, err
			}
			left -= nData
			b := make([]byte, nMIME+nData)
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, err
			}
			mime := string(b[:nMIME])
			if !mimeType.MatchString(mime) {
				return nil, errBadEnd(fmt.Sprintf("a MIME type %.40q", mime))
			}
			d.Data[mime] = strings.ToValidUTF8(string(b[nMIME:]), "\uFFFD")
		}
		if _, ok := d.Data["text/plain"]; !ok {
			return nil, errBadEnd("a display without text/plain")
		}
		out = append(out, d)
	}
	return out, nil
}

// decodeDisplays is a single run's displays (protocol.ResultsFile): a
// line with their count, then each.
func decodeDisplays(b []byte) ([]executor.Display, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r := bufio.NewReader(bytes.NewReader(b))
	head, err := readFields(r)
	if err != nil {
		return nil, err
	}
	if len(head) != 1 {
		return nil, errBadEnd("the displays' count")
	}
	n, err := count(head[0], protocol.DisplayCountMax+2)
	if err != nil {
		return nil, err
	}
	out, err := readDisplays(r, n)
	if err != nil {
		return nil, err
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return nil, errBadEnd("more than the displays")
	}
	return out, nil
}

// placeDisplays puts each display within the stdout it was shown among:
// an offset past stdoutBytes (the snippet's own file, or a forged one)
// goes to its end.
func placeDisplays(ds []executor.Display, stdoutBytes int64) []executor.Display {
	for i := range ds {
		ds[i].At = min(ds[i].At, stdoutBytes)
	}
	return ds
}

// displaysLost is the note on stderr for a run whose displays could not
// be read.
func displaysLost(err error) string {
	return fmt.Sprintf("\nrunblock: the run's displays are not shown: %v\n", err)
}

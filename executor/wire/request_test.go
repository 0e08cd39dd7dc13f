package wire_test

import (
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
)

// TestRequest: Limits.Request turns every front's decoded request into
// the executor's, the same way: limits capped, files decoded from text,
// base64 or hex, and each client's mistake an ErrInvalid or ErrTooLarge
// naming its field.
func TestRequest(t *testing.T) {
	lim := wire.Limits{Timeout: 2 * time.Second, MemoryBytes: 128 << 20, MaxCodeBytes: 100}
	many := make([]wire.File, wire.MaxInputFiles+1)
	for i := range many {
		many[i] = wire.File{Path: string(rune('a'+i%26)) + string(rune('a'+i/26))}
	}
	for _, tc := range []struct {
		name string
		p    wire.Program
		want executor.Request
		code executor.Code // of the error; "" for none
	}{
		{"snippet", wire.Program{Code: "1", Stdin: "x"}, executor.Request{Code: "1", Stdin: "x"}, ""},
		{"limits capped", wire.Program{Code: "1", Timeout: time.Minute, MemoryBytes: 1 << 40},
			executor.Request{Code: "1", Timeout: 2 * time.Second, MemoryBytes: 128 << 20}, ""},
		{"limits within", wire.Program{Code: "1", Timeout: time.Second, MemoryBytes: 1 << 20},
			executor.Request{Code: "1", Timeout: time.Second, MemoryBytes: 1 << 20}, ""},
		{"text file", wire.Program{Code: "1", Files: []wire.File{{Path: "a.txt", Content: "hi", Encoding: "text"}}},
			executor.Request{Code: "1", Files: []executor.File{{Path: "a.txt", Size: 2, Content: []byte("hi")}}}, ""},
		{"utf8 file", wire.Program{Code: "1", Files: []wire.File{{Path: "a.txt", Content: "hi"}}},
			executor.Request{Code: "1", Files: []executor.File{{Path: "a.txt", Size: 2, Content: []byte("hi")}}}, ""},
		{"base64 file", wire.Program{Code: "1", Files: []wire.File{{Path: "b", Content: "AAE=", Encoding: "base64"}}},
			executor.Request{Code: "1", Files: []executor.File{{Path: "b", Size: 2, Content: []byte{0, 1}}}}, ""},
		{"hex file", wire.Program{Code: "1", Files: []wire.File{{Path: "b", Content: "0001", Encoding: "hex"}}},
			executor.Request{Code: "1", Files: []executor.File{{Path: "b", Size: 2, Content: []byte{0, 1}}}}, ""},
		{"plain -c is a snippet", wire.Program{Launch: executor.LaunchCode, Code: "1"}, executor.Request{Code: "1"}, ""},
		{"-c with args is launched", wire.Program{Launch: executor.LaunchCode, Code: "1", Args: []string{"a"}},
			executor.Request{Code: "1", Args: []string{"a"}, Launch: executor.LaunchCode}, ""},
		{"a module is launched", wire.Program{Launch: executor.LaunchModule, Code: "m", Script: true},
			executor.Request{Code: "m", Launch: executor.LaunchModule, Script: true}, ""},
		{"bad base64", wire.Program{Code: "1", Files: []wire.File{{Path: "b", Content: "!!", Encoding: "base64"}}}, executor.Request{}, executor.ErrInvalid},
		{"unknown encoding", wire.Program{Code: "1", Files: []wire.File{{Path: "b", Encoding: "rot13"}}}, executor.Request{}, executor.ErrInvalid},
		{"bad path", wire.Program{Code: "1", Files: []wire.File{{Path: "../b"}}}, executor.Request{}, executor.ErrInvalid},
		{"too many files", wire.Program{Code: "1", Files: many}, executor.Request{}, executor.ErrInvalid},
		{"negative timeout", wire.Program{Code: "1", Timeout: wire.Seconds(-1)}, executor.Request{}, executor.ErrInvalid},
		{"negative memory", wire.Program{Code: "1", MemoryBytes: -1}, executor.Request{}, executor.ErrInvalid},
		{"code too big", wire.Program{Code: string(make([]byte, 101))}, executor.Request{}, executor.ErrTooLarge},
		{"files too big", wire.Program{Code: "1", Files: []wire.File{{Path: "b", Content: string(make([]byte, 100))}}}, executor.Request{}, executor.ErrTooLarge},
	} {
		got, err := lim.Request(tc.p)
		if tc.code != "" {
			if executor.ErrorCode(err) != tc.code {
				t.Errorf("%s: err %v, want %s", tc.name, err, tc.code)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestRequestNamesTheField: an error names the field as the front calls
// it, within a replayed cell.
func TestRequestNamesTheField(t *testing.T) {
	_, err := wire.Limits{MaxCodeBytes: 100}.Request(wire.Program{Field: "replay[1].", FilePath: "name",
		Files: []wire.File{{Path: "ok"}, {Path: "/abs"}}})
	var e *executor.Error
	if !errors.As(err, &e) || e.Code != executor.ErrInvalid || !strings.HasPrefix(e.Message, `replay[1].files[1].name: input file path "/abs"`) {
		t.Fatalf("err %v, want one naming replay[1].files[1].name", err)
	}
}

// TestBodyBytes: the HTTP body cap follows the code cap (JSON escapes up
// to 6 bytes a byte), and there is none without one.
func TestBodyBytes(t *testing.T) {
	if got := (wire.Limits{MaxCodeBytes: 1000}).BodyBytes(); got != 6000+64<<10 {
		t.Errorf("BodyBytes = %d", got)
	}
	if got := (wire.Limits{}).BodyBytes(); got != 0 {
		t.Errorf("BodyBytes without a code cap = %d, want 0", got)
	}
}

// TestFailureOf: one decision of what a failure shows and how loud it is
// logged: internal errors at Error and never shown, unavailable at Warn,
// the client's mistakes at Debug and shown in full.
func TestFailureOf(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		msg    string
		level  slog.Level
	}{
		{errors.New("secret path /x"), http.StatusInternalServerError, wire.InternalMessage, slog.LevelError},
		{&executor.Error{Code: executor.ErrInternal, Message: "fork failed"}, http.StatusInternalServerError, wire.InternalMessage, slog.LevelError},
		{&executor.Error{Code: executor.ErrUnavailable, Message: "no usable python"}, http.StatusServiceUnavailable, "no usable python", slog.LevelWarn},
		{&executor.Error{Code: executor.ErrUnavailable}, http.StatusServiceUnavailable, "executor unavailable, try again", slog.LevelWarn},
		{&executor.Error{Code: executor.ErrShutdown, Message: "shutting down"}, http.StatusServiceUnavailable, "shutting down", slog.LevelWarn},
		{executor.Errorf(executor.ErrInvalid, "files[0].content: not valid base64"), http.StatusBadRequest, "files[0].content: not valid base64", slog.LevelDebug},
		{executor.Errorf(executor.ErrTooLarge, "too big"), http.StatusRequestEntityTooLarge, "too big", slog.LevelDebug},
		{&executor.Error{Code: executor.ErrBusy}, http.StatusTooManyRequests, "too many snippets are waiting", slog.LevelDebug},
		{&executor.Error{Code: executor.ErrCanceled, Message: "run canceled"}, 499, "the request was cancelled", slog.LevelDebug},
	} {
		f := wire.FailureOf(tc.err)
		if f.Status != tc.status || f.Message != tc.msg || f.Level != tc.level {
			t.Errorf("FailureOf(%v) = %+v, want %d %q %v", tc.err, f, tc.status, tc.msg, tc.level)
		}
	}
	if got := wire.FailureOf(&executor.Error{Code: executor.ErrBusy, RetryAfter: 2500 * time.Millisecond}).RetryText(); got != "too many snippets are waiting (try again in 3 s)" {
		t.Errorf("RetryText = %q", got)
	}
}

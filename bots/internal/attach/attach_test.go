package attach

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

func TestName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"data.csv", "data.csv"},
		{"../../etc/passwd", "passwd"},
		{`..\..\win.ini`, "win.ini"},
		{"/abs/path/x.txt", "x.txt"},
		{"..", "file"},
		{".", "file"},
		{"", "file"},
		{"a\x00b\nc.txt", "abc.txt"},
		{"  spaced.txt  ", "spaced.txt"},
		{".env", ".env"},
		{"_scratch.py", "_scratch.py"},
		{"dir/", "dir"},
		{"\xff\xfebad.csv", "bad.csv"},
		{strings.Repeat("é", 200) + ".csv", strings.Repeat("é", 125) + ".csv"},
	} {
		if got := Name(tt.in); got != tt.want {
			t.Errorf("Name(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFetch(t *testing.T) {
	bodies := map[string]string{"/a": "a,b\n1,2\n", "/big": strings.Repeat("x", 100), "/lies": strings.Repeat("y", 50)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/lies" {
			w.(http.Flusher).Flush() // no Content-Length: only the LimitReader can tell
		}
		_, _ = w.Write([]byte(b))
	}))
	t.Cleanup(srv.Close)
	host := func(u *url.URL) bool { return "http://"+u.Host == srv.URL }
	f := Fetcher{Client: srv.Client(), Header: http.Header{"Authorization": {"Bearer tok"}}, Trusted: host, Limits: Limits{Files: 4, Bytes: 40}}
	files, omitted := f.Fetch(context.Background(), []Source{
		{Name: "data.csv", Size: 8, MIME: "text/csv", URL: srv.URL + "/a"},
		{Name: "../data.csv", Size: 8, URL: srv.URL + "/a"},
		{Name: "big.txt", Size: 100, URL: srv.URL + "/big"},
		{Name: "lies.txt", Size: 1, URL: srv.URL + "/lies"},
		{Name: "missing.txt", URL: srv.URL + "/missing"},
		{Name: "elsewhere.txt", URL: "http://example.invalid/x"},
		{Name: "nourl.txt"},
		{Name: "third.csv", URL: srv.URL + "/a"},
		{Name: "fourth.csv", URL: srv.URL + "/a"},
	})
	var got []string
	for _, f := range files {
		got = append(got, f.Path+"="+string(f.Content))
	}
	want := []string{"data.csv=a,b\n1,2\n", "data-2.csv=a,b\n1,2\n", "third.csv=a,b\n1,2\n", "fourth.csv=a,b\n1,2\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("files = %q, want %q", got, want)
	}
	wantOmitted := []executor.OmittedFile{
		{Path: "big.txt", Size: 100, Reason: ReasonSize},
		{Path: "lies.txt", Size: 1, Reason: ReasonSize},
		{Path: "missing.txt", Reason: ReasonFailed},
		{Path: "elsewhere.txt", Reason: ReasonUntrustedURL},
		{Path: "nourl.txt", Reason: ReasonUnavailable},
	}
	if len(omitted) != len(wantOmitted) {
		t.Fatalf("omitted = %+v, want %+v", omitted, wantOmitted)
	}
	for i := range omitted {
		if omitted[i] != wantOmitted[i] {
			t.Errorf("omitted[%d] = %+v, want %+v", i, omitted[i], wantOmitted[i])
		}
	}
	files, omitted = f.Fetch(context.Background(), []Source{
		{Name: "1", URL: srv.URL + "/a"}, {Name: "2", URL: srv.URL + "/a"}, {Name: "3", URL: srv.URL + "/a"},
		{Name: "4", URL: srv.URL + "/a"}, {Name: "5", URL: srv.URL + "/a"},
	})
	if len(files) != 4 || len(omitted) != 1 || omitted[0].Reason != ReasonCount {
		t.Errorf("count cap: %d files, omitted %+v", len(files), omitted)
	}
}

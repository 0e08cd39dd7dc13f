package console

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// messages splits input the way the console reads it.
func messages(t *testing.T, input string, max int) (msgs []string, tooLarge []bool) {
	t.Helper()
	b := New(Config{MaxMessageBytes: max}, nil, nil)
	r := bufio.NewReader(strings.NewReader(input))
	for range 100 {
		msg, large, err := b.readMessage(r)
		if msg != "" || large {
			msgs = append(msgs, msg)
			tooLarge = append(tooLarge, large)
		}
		if errors.Is(err, io.EOF) {
			return msgs, tooLarge
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("reader did not reach EOF")
	return nil, nil
}

func TestReadMessage(t *testing.T) {
	fence := "```"
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"one line at EOF", "print(1)", []string{"print(1)"}},
		{"piped example", "please run\n" + fence + "python\nprint(1+1)\n" + fence + "\n", []string{"please run\n" + fence + "python\nprint(1+1)\n" + fence}},
		{"blank line ends a message", "a\nb\n\nc\n", []string{"a\nb", "c"}},
		{"whitespace-only line is blank", "a\n \t \nc", []string{"a", "c"}},
		{"leading and repeated blank lines skipped", "\n\n\na\n\n\n\nb\n\n", []string{"a", "b"}},
		{"blank line inside a fence does not end the message",
			fence + "python\ndef f():\n\n    return 1\n\nprint(f())\n" + fence + "\n\nnext",
			[]string{fence + "python\ndef f():\n\n    return 1\n\nprint(f())\n" + fence, "next"}},
		{"one-line fence does not open a block", "run " + fence + "print(1)" + fence + "\n\nx", []string{"run " + fence + "print(1)" + fence, "x"}},
		{"unclosed fence runs to EOF", fence + "\nprint(1)\n\n\nprint(2)", []string{fence + "\nprint(1)\n\n\nprint(2)"}},
		{"crlf line endings", "a\r\nb\r\n\r\nc\r\n", []string{"a\nb", "c"}},
		{"two blocks and a stdin block", fence + "python\nx=input()\n" + fence + "\n" + fence + "stdin\n5\n" + fence + "\n",
			[]string{fence + "python\nx=input()\n" + fence + "\n" + fence + "stdin\n5\n" + fence}},
		{"empty input", "", nil},
		{"blank only", "\n\n \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := messages(t, tt.input, 0)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadMessageBounded(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name      string
		input     string
		wantLarge []bool
	}{
		{"long line", long + "\n\nok", []bool{true, false}},
		{"many lines", strings.Repeat("abcdefghi\n", 200) + "\nok", []bool{true, false}},
		{"a line longer than the bufio buffer", strings.Repeat("y", 10000) + "\n\nok", []bool{true, false}},
		{"just fits", strings.Repeat("z", 1024) + "\n\nok", []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, large := messages(t, tt.input, 1024)
			if !slices.Equal(large, tt.wantLarge) {
				t.Fatalf("tooLarge = %v, want %v (messages %d)", large, tt.wantLarge, len(msgs))
			}
			for i, m := range msgs {
				if len(m) > 1024 {
					t.Errorf("message %d holds %d bytes, over the 1024 limit", i, len(m))
				}
			}
			if msgs[len(msgs)-1] != "ok" {
				t.Errorf("the message after the large one was lost: %q", msgs[len(msgs)-1])
			}
		})
	}
}

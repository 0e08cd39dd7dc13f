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
		{"blank line inside a tilde block does not end the message",
			"~~~python\ndef f():\n    return 1\n\nprint(f())\n~~~\n\n",
			[]string{"~~~python\ndef f():\n    return 1\n\nprint(f())\n~~~"}},
		{"indented tilde block with a longer closer", "  ~~~\nx = 1\n\nprint(x)\n  ~~~~\n\nnext",
			[]string{"  ~~~\nx = 1\n\nprint(x)\n  ~~~~", "next"}},
		{"backticks in inline code do not open a block", "use `` ``` `` fences\n\nnext", []string{"use `` ``` `` fences", "next"}},
		{"blank lines after an unclosed tilde fence", "~~~\na\n\n\nb", []string{"~~~\na\n\n\nb"}},
		{"last line of 4096 bytes without a newline", "x = 1\n" + strings.Repeat("#", 4096), []string{"x = 1\n" + strings.Repeat("#", 4096)}},
		{"only line of 8192 bytes without a newline", strings.Repeat("#", 8192), []string{strings.Repeat("#", 8192)}},
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
		{"dropped lines hold a block with a blank line", "```\n" + strings.Repeat("w", 2000) + "\n\nprint(2)\n```\n\nok", []bool{true, false}},
		{"dropped tilde block with a blank line", "~~~\n" + strings.Repeat("w", 2000) + "\n\nprint(2)\n~~~\n\nok", []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, large := messages(t, tt.input, 1024)
			if len(msgs) == 0 {
				t.Fatal("no message read")
			}
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

// TestReadMessageTooLargeAtEOF: a last line over the limit, without a
// newline and a multiple of the reader's buffer long, is still answered.
func TestReadMessageTooLargeAtEOF(t *testing.T) {
	for _, n := range []int{4096, 8192, 3 << 20} {
		_, large := messages(t, strings.Repeat("a", n), 1024)
		if !slices.Equal(large, []bool{true}) {
			t.Errorf("%d bytes: tooLarge = %v, want [true]", n, large)
		}
	}
}

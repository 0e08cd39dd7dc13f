package formatting

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	discord := ExtractOptions{Platform: Discord}
	slack := ExtractOptions{Platform: Slack}
	console := ExtractOptions{Platform: Console}
	triggered := ExtractOptions{Platform: Discord, Triggered: true}
	raw := ExtractOptions{Platform: Slack, Raw: true, Triggered: true}
	tests := []struct {
		name string
		text string
		opts ExtractOptions
		want Extraction
	}{
		{"python tag", "```python\nprint(1)\n```", discord, found("print(1)")},
		{"py tag", "```py\nprint(1)\n```", discord, found("print(1)")},
		{"python3 tag", "```python3\nprint(1)\n```", discord, found("print(1)")},
		{"tag case-insensitive", "```PyThOn3\nprint(1)\n```", discord, found("print(1)")},
		{"tag with trailing spaces", "```python  \nprint(1)\n```", discord, found("print(1)")},
		{"bare fence", "```\nprint(1)\n```", discord, found("print(1)")},
		{"no newline after fence", "```print(1)\nprint(2)```", slack, found("print(1)\nprint(2)")},
		{"one line block", "```print(1)```", slack, found("print(1)")},
		{"one line with tag on Slack", "```py print(1)```", slack, found("print(1)")},
		{"one line tag word alone on Slack", "```python```", slack, Extraction{}},
		{"one line language-named variable", "```c = 1```", slack, found("c = 1")},
		{"one line other language on Slack", "```js console.log(1)```", slack, Extraction{OtherLanguages: []string{"js"}}},
		{"one line has no language on Discord", "```py print(1)```", discord, found("py print(1)")},
		{"one line word alone is code on Discord", "```python```", discord, found("python")},
		{"one line other language is code on Discord", "```js console.log(1)```", discord, found("js console.log(1)")},
		{"word then line break is Discord's language", "```py\nprint(1)```", discord, found("print(1)")},
		{"single word first line is code on Slack", "```pass\nprint(1)```", slack, found("pass\nprint(1)")},
		{"single word first line is Discord's hidden language", "```pass\nprint(1)```", discord, Extraction{OtherLanguages: []string{"pass"}}},
		{"CRLF", "```python\r\nif True:\r\n    print(1)\r\n```\r\n", discord, found("if True:\n    print(1)")},
		{"lone CR", "```python\rprint(1)\rprint(2)```", discord, found("print(1)\nprint(2)")},
		{"text around", "hi, run this: ```py\nprint(1)``` thanks", discord, found("print(1)")},
		{"fence glued to text runs", "text```print(1)```text", discord, found("print(1)")},
		{"fence glued to text runs when triggered", "text```print(1)```text", triggered, found("print(1)")},
		{"fence glued to a language word runs", "js```print(1)```", slack, found("print(1)")},
		{"language word before a spaced fence", "js ```console.log(1)```", discord, Extraction{OtherLanguages: []string{"js"}}},
		{"closed mid-line", "```py\nprint(1)```and more", discord, found("print(1)")},
		{"unclosed fence takes the rest", "look:\n```python\nprint(1)\nprint(2)\n", discord, found("print(1)\nprint(2)")},
		{"backticks inside the code close the block as on Discord", "```py\nprint(\"```\")\n```", discord, found("print(\"")},
		{"longer fence holds three backticks", "````py\nprint(\"```\")\n````", discord, found("print(\"```\")")},
		{"two blocks joined", "```py\na = 1\n```\ntext\n```py\nprint(a)\n```", discord, Extraction{Found: true, Code: "a = 1\nprint(a)", Blocks: 2}},
		{"each block dedented on its own", "```\n  a = 1\n```\n```\n    print(a)\n```", discord, Extraction{Found: true, Code: "a = 1\nprint(a)", Blocks: 2}},
		{"untagged blocks ignored next to a tagged one", "```python\nprint(1)\n```\nOutput:\n```\n1\n```", discord, found("print(1)")},
		{"other language listed, python runs", "```js\nx\n```\n```py\nprint(1)\n```", discord, Extraction{Found: true, Code: "print(1)", Blocks: 1, OtherLanguages: []string{"js"}}},
		{"other languages only", "```js\nx\n```\n```Rust\ny\n```\n```JS\nz```", discord, Extraction{OtherLanguages: []string{"js", "rust"}}},
		{"stdin block", "```py\nprint(input())\n```\n```stdin\nann\n```", discord, Extraction{Found: true, Code: "print(input())", Blocks: 1, Stdin: "ann\n"}},
		{"input block before code, kept as typed", "```input\n  a \n\nb\n```\n```py\nprint(1)\n```", discord, Extraction{Found: true, Code: "print(1)", Blocks: 1, Stdin: "  a \n\nb\n"}},
		{"two stdin blocks", "```py\nx\n```\n```stdin\n1```\n```STDIN\n2\n```", discord, Extraction{Found: true, Code: "x", Blocks: 1, Stdin: "1\n2\n"}},
		{"stdin without code", "```stdin\n1\n```", discord, Extraction{}},
		{"empty python block", "```python\n\n   \n```", discord, Extraction{}},
		{"tilde fence", "~~~python\nprint(1)\n~~~", console, found("print(1)")},
		{"tilde fence mid-line is text", "a ~~~python\nprint(1)\n~~~", console, Extraction{}},
		{"tilde fence unclosed", "~~~\nprint(1)", console, found("print(1)")},
		{"dedent keeps relative indentation", "```\n    if x:\n        y()\n\n    z()\n```", discord, found("if x:\n    y()\n\nz()")},
		{"dedent with tabs", "```\n\tif x:\n\t\ty()\n```", discord, found("if x:\n\ty()")},
		{"mixed indentation has no common margin", "```\n\tif x:\n    y()\n```", discord, found("\tif x:\n    y()")},
		{"internal whitespace kept", "```\nprint('a    b')  \n\n\n\nprint( 1 )\t\n```", discord, found("print('a    b')  \n\n\n\nprint( 1 )")},
		{"leading blank lines dropped", "```\n\n  \nprint(1)\n```", discord, found("print(1)")},
		{"triple-quoted string kept", "```\ns = '''\n  a\n\n'''\n```", discord, found("s = '''\n  a\n\n'''")},
		{"quoted block", "> ```py\n> if x:\n>     print(1)\n> ```\nlook", discord, found("if x:\n    print(1)")},
		{"quoted block in slack", "&gt; ```if x:\n&gt;     print(1 &gt; 0)```", slack, found("if x:\n    print(1 > 0)")},
		{"comparison lines unquoted only in a quote", "```\nx = (1\n> 0)\n```", discord, found("x = (1\n> 0)")},
		{"inline code ignored untriggered", "use `print(1)` here", discord, Extraction{}},
		{"inline code when triggered", "please `print(1)`", triggered, found("print(1)")},
		{"inline spans joined", "`a = 2` then `print(a)`", triggered, Extraction{Found: true, Code: "a = 2\nprint(a)", Blocks: 2}},
		{"double backtick inline", "`` print('`') ``", triggered, found("print('`')")},
		{"unclosed inline backtick", "`print(1)", triggered, Extraction{}},
		{"inline ignored next to a fence", "`x` and ```js\ny```", triggered, Extraction{OtherLanguages: []string{"js"}}},
		{"raw text", "print(1)\nprint(2)", raw, found("print(1)\nprint(2)")},
		{"raw one inline span", " `print(1)` ", raw, found("print(1)")},
		{"raw inline span inside code", "print('`x`')", raw, found("print('`x`')")},
		{"raw fenced", "```py\nprint(1)```", raw, found("print(1)")},
		{"raw code with stdin block", "print(input())\n```stdin\n5\n```", raw, Extraction{Found: true, Code: "print(input())", Blocks: 1, Stdin: "5\n"}},
		{"raw slack escapes", "print(1 &lt; 2)", raw, found("print(1 < 2)")},
		{"raw other language", "```js\n1```", raw, Extraction{OtherLanguages: []string{"js"}}},
		{"raw empty", "  \n ", raw, Extraction{}},
		{"slack entities", "```print(1 &lt; 2 &gt; 0, 'a &amp; b', '&amp;lt;')```", slack, found("print(1 < 2 > 0, 'a & b', '&lt;')")},
		{"discord keeps entities", "```print('&lt;')```", discord, found("print('&lt;')")},
		{"slack link with label", "```print('<http://example.com|example.com>')```", slack, found("print('example.com')")},
		{"slack link without label", "```print('<https://example.com/a?b=1&amp;c=2>')```", slack, found("print('https://example.com/a?b=1&c=2')")},
		{"slack mailto", "```print('<mailto:ann@example.com|ann@example.com>')```", slack, found("print('ann@example.com')")},
		{"slack user mention", "```print('<@U0123>', '<@U0456|bob>')```", slack, found("print('@U0123', '@bob')")},
		{"slack channel", "```print('<#C0123|general>', '<#C0456>')```", slack, found("print('#general', '#C0456')")},
		{"slack special mentions", "```print('<!here>', '<!channel>', '<!everyone>', '<!subteam^S01|@devs>', '<!subteam^S02>', '<!date^1|Dec 2>')```", slack, found("print('@here', '@channel', '@everyone', '@devs', '@S02', 'Dec 2')")},
		{"slack link label with entity", "```print('<http://a.b/?x=1&amp;y=2|a.b/?x=1&amp;y=2>')```", slack, found("print('a.b/?x=1&y=2')")},
		{"slack stdin decoded", "```print(input())```\n```stdin\n&lt;b&gt;\n```", slack, Extraction{Found: true, Code: "print(input())", Blocks: 1, Stdin: "<b>\n"}},
		{"nbsp indentation", "```\nif x:\n\u00a0\u00a0\u00a0\u00a0y()\n```", discord, found("if x:\n    y()")},
		{"nbsp in string kept", "```\nprint('a\u00a0b')\u00a0\n```", discord, found("print('a\u00a0b')")},
		{"zero-width outside strings removed", "```\n\ufeffprint(1)\u200b\nx\u200d = 2\n```", discord, found("print(1)\nx = 2")},
		{"zero-width in strings kept", "```\nprint('👨\u200d👩\u200d👧', \"a\u200bb\")\n```", discord, found("print('👨\u200d👩\u200d👧', \"a\u200bb\")")},
		{"zero-width in comment kept", "```\nx = 1 # a\u200bb\u00a0\ny\u00a0= 2\n```", discord, found("x = 1 # a\u200bb\u00a0\ny = 2")},
		{"curly quotes outside strings", "```\nprint(\u201chello\u201d, \u2018it\u2019)\n```", discord, found("print(\"hello\", 'it')")},
		{"curly quotes inside strings kept", "```\nprint(\"\u201cq\u201d\", '\u2019')\n```", discord, found("print(\"\u201cq\u201d\", '\u2019')")},
		{"curly string closed by straight quote", "```\nprint(\u201chi\")\n```", discord, found("print(\"hi\")")},
		{"escaped quote in string", "```\nprint(\"a\\\"\u00a0\")\u00a0\n```", discord, found("print(\"a\\\"\u00a0\")")},
		{"triple string spans lines", "```\ns = \"\"\"\n\u00a0\n\"\"\"\u00a0\n```", discord, found("s = \"\"\"\n\u00a0\n\"\"\"")},
		{"unterminated string ends at the line", "```\nprint('a)\nx\u00a0= 1\n```", discord, found("print('a)\nx = 1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Extract(tt.text, tt.opts)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Extract(%q)\n got %#v\nwant %#v", tt.text, got, tt.want)
			}
		})
	}
}

func found(code string) Extraction {
	return Extraction{Found: true, Code: code, Blocks: 1}
}

func TestExtractionNotice(t *testing.T) {
	if n := Extract("hello", ExtractOptions{}).Notice(); n != NoticeNoCode {
		t.Errorf("no code: got notice %d", n)
	}
	if n := Extract("```js\n1\n```", ExtractOptions{}).Notice(); n != NoticeNotPython {
		t.Errorf("js: got notice %d", n)
	}
}

// TestExtractWire extracts real messages as the platforms deliver them: the
// text of a Slack event, the text of a Slack slash command (a form body),
// the content of a Discord MESSAGE_CREATE dispatch and the code option of a
// Discord /run INTERACTION_CREATE. Commands are raw: their text is code.
func TestExtractWire(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "wire", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no wire fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			text, opts := wireMessage(t, file, data)
			golden(t, filepath.Join("extract", name+".golden"), describe(text, Extract(text, opts)))
		})
	}
}

func wireMessage(t *testing.T, file string, data []byte) (string, ExtractOptions) {
	t.Helper()
	if filepath.Ext(file) == ".form" {
		form, err := url.ParseQuery(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		return form.Get("text"), ExtractOptions{Platform: Slack, Triggered: true, Raw: true}
	}
	var msg struct {
		Event *struct {
			Text string `json:"text"`
		} `json:"event"`
		T string `json:"t"`
		D *struct {
			Content string `json:"content"`
			Data    struct {
				Options []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"options"`
			} `json:"data"`
		} `json:"d"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatal(err)
	}
	switch {
	case msg.Event != nil:
		return msg.Event.Text, ExtractOptions{Platform: Slack, Triggered: true}
	case msg.T == "MESSAGE_CREATE":
		return msg.D.Content, ExtractOptions{Platform: Discord, Triggered: true}
	case msg.T == "INTERACTION_CREATE":
		for _, o := range msg.D.Data.Options {
			if o.Name == "code" {
				return o.Value, ExtractOptions{Platform: Discord, Triggered: true, Raw: true}
			}
		}
	}
	t.Fatal("not a Slack event, a slash command, a Discord message or a /run interaction")
	return "", ExtractOptions{}
}

func describe(text string, e Extraction) string {
	var b strings.Builder
	b.WriteString("--- message ---\n" + text + "\n")
	b.WriteString("--- found: " + strconv.FormatBool(e.Found) + ", blocks: " + strconv.Itoa(e.Blocks))
	b.WriteString(", other languages: " + strings.Join(e.OtherLanguages, " ") + "\n")
	b.WriteString("--- code ---\n" + e.Code + "\n")
	b.WriteString("--- stdin ---\n" + e.Stdin)
	if e.Transcript != nil {
		b.WriteString("--- transcript ---\n")
		for _, s := range e.Transcript.Statements {
			b.WriteString(">>> " + strings.ReplaceAll(strings.TrimSuffix(s.Source, "\n"), "\n", "\n... ") + "\n")
			if s.Check {
				b.WriteString("expect: " + strconv.Quote(s.Expected) + "\n")
			}
		}
	}
	return b.String()
}

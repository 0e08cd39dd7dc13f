package formatting

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

// pngWith is a PNG signature and the chunks given as kind, data pairs.
func pngWith(chunks ...string) []byte {
	b := bytes.NewBuffer(bytes.Clone(pngSignature))
	for i := 0; i+1 < len(chunks); i += 2 {
		_ = binary.Write(b, binary.BigEndian, uint32(len(chunks[i+1])))
		b.WriteString(chunks[i] + chunks[i+1])
		_ = binary.Write(b, binary.BigEndian, crc32.ChecksumIEEE([]byte(chunks[i]+chunks[i+1])))
	}
	return b.Bytes()
}

func TestAltText(t *testing.T) {
	plot, err := os.ReadFile("testdata/plot-description.png") // matplotlib's savefig(metadata={"Description": …})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file executor.File
		want string
	}{
		{"matplotlib's iTXt", executor.File{Path: "figure-1.png", MIME: "image/png", Content: plot},
			"Plot figure-1.png: Sales, x axis: month, y axis: € (k)"},
		{"Latin-1 tEXt", executor.File{Path: "figure-2.png", MIME: "image/png", Content: pngWith("tEXt", "Software\x00mpl", "tEXt", "Description\x00Caf\xe9 sales", "IEND", "")},
			"Plot figure-2.png: Café sales"},
		{"no description", executor.File{Path: "a.png", MIME: "image/png", Content: pngWith("IEND", "")},
			"Image a.png made by the snippet"},
		{"empty description", executor.File{Path: "a.png", MIME: "image/png", Content: pngWith("tEXt", "Description\x00", "IEND", "")},
			"Image a.png made by the snippet"},
		{"compressed iTXt is not read", executor.File{Path: "a.png", MIME: "image/png", Content: pngWith("iTXt", "Description\x00\x01\x00\x00\x00x\x9c")},
			"Image a.png made by the snippet"},
		{"a chunk longer than the file", executor.File{Path: "a.png", MIME: "image/png", Content: append(bytes.Clone(pngSignature), 0xff, 0xff, 0xff, 0xff, 't', 'E', 'X', 't', 0, 0, 0, 0)},
			"Image a.png made by the snippet"},
		{"not a PNG", executor.File{Path: "b.jpg", MIME: "image/jpeg", Content: []byte("\xff\xd8Description\x00x")},
			"Image b.jpg made by the snippet"},
		{"control characters and newlines", executor.File{Path: "c\n.png", MIME: "image/png", Content: pngWith("iTXt", "Description\x00\x00\x00\x00\x00a\nb\x1b[2J\u202ec")},
			`Plot c\n.png: a b [2J c`},
		{"not an image", executor.File{Path: "data.csv", MIME: "text/csv", Content: []byte("a\n")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AltText(tc.file); got != tc.want {
				t.Errorf("AltText = %q, want %q", got, tc.want)
			}
		})
	}
	long := AltText(executor.File{Path: "l.png", MIME: "image/png", Content: pngWith("tEXt", "Description\x00"+strings.Repeat("x", 3000))})
	if n := len([]rune(long)); n != MaxAltText || !strings.HasSuffix(long, "…") {
		t.Errorf("long description: %d characters, ends %q", n, long[len(long)-8:])
	}
}

package formatting

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/runblock/runblock/executor"
)

// MaxAltText bounds an image's alt text, in characters: Discord takes
// 1024 in an attachment's description.
const MaxAltText = 1000

// AltText is the alt text of a run's file shown as an image: "Plot
// figure-1.png: Sales, x axis: month, y axis: € (k)" when the PNG carries
// a Description (the sandbox writes the titles and axis labels matplotlib
// knows into each figure it saves), else "Image NAME made by the snippet";
// "" for a file that is not an image.
func AltText(f executor.File) string {
	if !strings.HasPrefix(f.MIME, "image/") {
		return ""
	}
	name := FileName(f.Path)
	desc := strings.Join(strings.FieldsFunc(pngDescription(f.Content), func(r rune) bool {
		return unicode.IsSpace(r) || unsafeInName(r)
	}), " ")
	alt := "Image " + name + " made by the snippet"
	if desc != "" {
		alt = "Plot " + name + ": " + desc
	}
	if utf8.RuneCountInString(alt) > MaxAltText {
		alt = string([]rune(alt)[:MaxAltText-1]) + "…"
	}
	return alt
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// pngDescription returns the text of a PNG's Description chunk: tEXt
// (Latin-1) or uncompressed iTXt (UTF-8); "" when there is none.
func pngDescription(b []byte) string {
	if !bytes.HasPrefix(b, pngSignature) {
		return ""
	}
	for b = b[len(pngSignature):]; len(b) >= 12; {
		n := binary.BigEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-12) {
			return ""
		}
		kind, data := string(b[4:8]), b[8:8+n]
		b = b[12+n:]
		key, rest, ok := bytes.Cut(data, []byte{0})
		if !ok || string(key) != "Description" {
			continue
		}
		switch kind {
		case "tEXt":
			runes := make([]rune, len(rest))
			for i, c := range rest {
				runes[i] = rune(c) // Latin-1
			}
			return string(runes)
		case "iTXt":
			// compression flag, method, language\0, translated keyword\0, text
			if len(rest) < 2 || rest[0] != 0 {
				return ""
			}
			_, rest, ok = bytes.Cut(rest[2:], []byte{0})
			if !ok {
				return ""
			}
			_, text, ok := bytes.Cut(rest, []byte{0})
			if !ok || !utf8.Valid(text) {
				return ""
			}
			return string(text)
		}
	}
	return ""
}

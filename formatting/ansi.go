package formatting

import (
	"strconv"
	"strings"
)

// Discord renders ANSI colour in a code block tagged ansi, and only the SGR
// codes 0 (reset), 1 (bold), 4 (underline), 30–37 (foreground) and 40–47
// (background). Output's SGR sequences are read as a terminal reads them
// (the state carries across lines, 22, 24, 39 and 49 turn one attribute
// off, bright colours 90–97 and 100–107, 256 colours and truecolour are
// mapped to the nearest of the eight colours) and written back with those
// codes only, each line on its own: it starts from the default style and
// ends with a reset when it changed it, so a view cut to whole lines or to
// the head of a line is balanced and never splits a sequence.

// style is the part of a terminal's SGR state Discord renders.
type style struct {
	fg, bg          uint8 // 30–37 and 40–47, 0: the default
	bold, underline bool
}

// styleSpan styles a line from byte at to the next span.
type styleSpan struct {
	at int
	st style
}

// apply returns the style after a control sequence whose parameters,
// intermediates and final byte are seq; a sequence other than SGR (final
// byte m, parameters digits, ';' and ':') changes nothing.
func (st style) apply(seq string) style {
	params, ok := strings.CutSuffix(seq, "m")
	if !ok || strings.Trim(params, "0123456789;:") != "" {
		return st
	}
	ps := strings.Split(params, ";")
	for k := 0; k < len(ps); k++ {
		sub := strings.Split(ps[k], ":")
		n, _ := strconv.Atoi(sub[0]) // "" is 0
		switch {
		case n == 0:
			st = style{}
		case n == 1:
			st.bold = true
		case n == 22:
			st.bold = false
		case n == 4:
			st.underline = len(sub) == 1 || sub[1] != "0"
		case n == 24:
			st.underline = false
		case n >= 30 && n <= 37, n >= 40 && n <= 47:
			st.setColour(n)
		case n >= 90 && n <= 97, n >= 100 && n <= 107:
			st.setColour(n - 60)
		case n == 39:
			st.fg = 0
		case n == 49:
			st.bg = 0
		case n == 38 || n == 48:
			var c int
			var ok bool
			if len(sub) > 1 {
				c, ok = extendedColour(sub[1:])
			} else {
				var used int
				c, used, ok = extendedParams(ps[k+1:])
				k += used
			}
			if ok {
				st.setColour(n - 8 + c) // 30+c or 40+c
			}
		}
	}
	return st
}

func (st *style) setColour(n int) {
	if n < 40 {
		st.fg = uint8(n)
	} else {
		st.bg = uint8(n)
	}
}

// extendedParams reads the colour of 38;5;N or 38;2;R;G;B from the
// parameters after 38 (or 48) and says how many it used.
func extendedParams(ps []string) (colour, used int, ok bool) {
	switch {
	case len(ps) >= 2 && ps[0] == "5":
		c, ok := extendedColour(ps[:2])
		return c, 2, ok
	case len(ps) >= 4 && ps[0] == "2":
		c, ok := extendedColour(ps[:4])
		return c, 4, ok
	}
	return 0, len(ps), false
}

// extendedColour maps 5;N (256 colours) or 2;R;G;B (truecolour; the
// colon form may carry a colour space id first) to the nearest of the
// eight colours, 0–7.
func extendedColour(sub []string) (int, bool) {
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	switch {
	case len(sub) == 2 && sub[0] == "5":
		return colour256(num(sub[1])), true
	case len(sub) >= 4 && sub[0] == "2":
		rgb := sub[len(sub)-3:]
		return rgbColour(num(rgb[0]), num(rgb[1]), num(rgb[2])), true
	}
	return 0, false
}

func colour256(n int) int {
	switch {
	case n < 0 || n > 255:
		return 7
	case n < 8:
		return n
	case n < 16:
		return n - 8
	case n < 232: // the 6×6×6 cube
		n -= 16
		level := func(v int) int { return [6]int{0, 95, 135, 175, 215, 255}[v] }
		return rgbColour(level(n/36), level(n/6%6), level(n%6))
	default: // the grey ramp
		return rgbColour(8+(n-232)*10, 8+(n-232)*10, 8+(n-232)*10)
	}
}

// rgbColour is the ANSI colour (red 1, green 2, blue 4) with each channel
// at least half lit.
func rgbColour(r, g, b int) int {
	c := 0
	if r >= 128 {
		c |= 1
	}
	if g >= 128 {
		c |= 2
	}
	if b >= 128 {
		c |= 4
	}
	return c
}

// codes returns the SGR parameters that set st from the default style.
func (st style) codes() []string {
	var ps []string
	if st.bold {
		ps = append(ps, "1")
	}
	if st.underline {
		ps = append(ps, "4")
	}
	if st.fg != 0 {
		ps = append(ps, strconv.Itoa(int(st.fg)))
	}
	if st.bg != 0 {
		ps = append(ps, strconv.Itoa(int(st.bg)))
	}
	return ps
}

// transition returns the shortest sequence of codes Discord renders that
// turns style from into style to: a reset first when to drops something
// from has, as Discord knows no code turning one attribute off.
func transition(from, to style) string {
	if from == to {
		return ""
	}
	var ps []string
	if from.bold && !to.bold || from.underline && !to.underline || from.fg != 0 && to.fg == 0 || from.bg != 0 && to.bg == 0 {
		ps = append([]string{"0"}, to.codes()...)
	} else {
		if to.bold && !from.bold {
			ps = append(ps, "1")
		}
		if to.underline && !from.underline {
			ps = append(ps, "4")
		}
		if to.fg != from.fg {
			ps = append(ps, strconv.Itoa(int(to.fg)))
		}
		if to.bg != from.bg {
			ps = append(ps, strconv.Itoa(int(to.bg)))
		}
	}
	return "\x1b[" + strings.Join(ps, ";") + "m"
}

// coloured reports whether the shown head of a line (its first n bytes)
// has a styled character.
func coloured(sp []styleSpan, n int) bool {
	for _, s := range sp {
		if s.at < n && s.st != (style{}) {
			return true
		}
	}
	return false
}

// sgrLine writes the shown head l of a line with the codes of its spans,
// ending with a reset when the line is not in the default style at its end.
func sgrLine(l string, sp []styleSpan) string {
	var b strings.Builder
	cur := style{}
	for k, s := range sp {
		if s.at >= len(l) {
			break
		}
		if k == 0 && s.at > 0 {
			b.WriteString(l[:s.at])
		}
		end := len(l)
		if k+1 < len(sp) && sp[k+1].at < end {
			end = sp[k+1].at
		}
		b.WriteString(transition(cur, s.st))
		cur = s.st
		b.WriteString(l[s.at:end])
	}
	if len(sp) == 0 || sp[0].at >= len(l) {
		b.WriteString(l)
	}
	if cur != (style{}) {
		b.WriteString("\x1b[0m")
	}
	return b.String()
}

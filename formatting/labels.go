package formatting

import (
	"regexp"
	"strings"
	"sync"
)

// outputLabel matches the last clause of a line that introduces program
// output rather than code: "Output:", "Result:", "Expected output:", "You
// should see:", "This prints:", "which gives:", "Here's the output:"
// (case-insensitive, the trailing colon taken off). Like the package's other
// patterns it is compiled on first use: every sandbox init is a fresh
// runblock process that never extracts, and should not pay for compiling.
var outputLabel = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:(?:here's|here’s|here is|here are|and|so|then|now|running it|run it and|if you run it|when you run it)\s+)*(?:` +
		`(?:(?:sample|example|expected|actual|program|console|terminal|the|its|this) )?(?:output|outputs|result|results|stdout)(?: (?:is|was|will be|should be|would be))?` +
		`|(?:you|you'll|you will|you should|you'd|you would|you can|we|we'll|we should|it|it will|it should|this|this will|this should|that|which|should|will|would)` +
		` (?:see|get|print|output|display|show|return|give|produce|yield)s?` +
		`|prints|printed|outputs|returns|gives|produces|yields` +
		`)(?: something like| like| (?:the |this )?(?:following|output|result))?(?: this| that)?(?: \([^)]*\))?$`)
})

// outputHeading matches a line that is only an output label, without a
// colon.
var outputHeading = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:(?:sample|example|expected|actual|program|console|terminal) )?(?:output|outputs|result|results|stdout)$`)
})

// labelsOutput reports whether the text before a fence ends with a line
// that labels the block as output. before is the text between the previous
// block and this fence; its last line, or the last non-blank line when the
// fence starts its own line, is the label.
func labelsOutput(before string) bool {
	before = strings.TrimRight(before, " \t\n")
	line := before
	if nl := strings.LastIndexByte(before, '\n'); nl >= 0 {
		line = before[nl+1:]
	}
	line = strings.TrimSpace(line)
	for _, q := range []string{"&gt;", ">"} {
		line = strings.TrimSpace(strings.TrimPrefix(line, q))
	}
	line = strings.Trim(line, "*_#-• ")
	text, ok := strings.CutSuffix(strings.TrimRight(line, "*_ "), ":")
	if !ok {
		// A heading without a colon: "**Output**", "### Expected output".
		return outputHeading().MatchString(line)
	}
	text = strings.TrimSpace(strings.Trim(text, "*_ "))
	// The last clause only: "Run it. Output:" labels, "Output goes to a file, run:" does not.
	if i := strings.LastIndexAny(text, ".!?,;"); i >= 0 {
		text = strings.TrimSpace(text[i+1:])
	}
	if strings.Contains(strings.ToLower(text), "how to") {
		return false
	}
	return outputLabel().MatchString(text)
}

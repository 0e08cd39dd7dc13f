package stage

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// bound cuts st to the report's bounds within lim: at most lim.MaxFiles
// files of lim.MaxBytes in all, paths of protocol.ReportMaxPath bytes and
// protocol.ReportMaxOmitted named omitted files; what is cut is named as omitted.
func bound(st *protocol.InitStatus, lim protocol.CollectLimits) {
	st.Error = cutString(st.Error, protocol.ReportMaxError)
	if len(st.Displays) > protocol.DisplaysMax {
		st.Displays = nil
	}
	var files []executor.File
	var omitted []executor.OmittedFile
	left := lim.MaxBytes
	for _, f := range st.Files {
		size := int64(len(f.Content))
		switch {
		case len(f.Path) > protocol.ReportMaxPath:
			omitted = append(omitted, executor.OmittedFile{Path: f.Path, Size: size, Reason: executor.OmitUnreadable})
		case len(files) >= lim.MaxFiles:
			omitted = append(omitted, executor.OmittedFile{Path: f.Path, Size: size, Reason: executor.OmitCount})
		case size > left:
			omitted = append(omitted, executor.OmittedFile{Path: f.Path, Size: size, Reason: executor.OmitSize})
		default:
			left -= size
			files = append(files, f)
		}
	}
	st.Files = files
	omitted = append(omitted, st.Omitted...)
	more := len(omitted) - protocol.ReportMaxOmitted
	if more > 0 {
		omitted = omitted[:protocol.ReportMaxOmitted]
	}
	for i := range omitted {
		omitted[i].Path = cutString(omitted[i].Path, protocol.ReportMaxPath)
		omitted[i].Reason = cutString(omitted[i].Reason, 256)
	}
	if more > 0 {
		omitted = append(omitted, executor.OmittedFile{Path: protocol.NotNamedPath(more), Reason: executor.OmitNotNamed, Count: more})
	}
	st.Omitted = omitted
}

// cutString cuts s to at most n bytes, at a character boundary where s is
// UTF-8, ending in "…" when cut.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for i := 0; i < utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	return s[:cut] + mark
}

// workDirUnreadable is what a report says of a work dir the init could
// not list: a run's result, not the service's failure.
func workDirUnreadable(err error) []executor.OmittedFile {
	return []executor.OmittedFile{{Path: ".", Reason: executor.OmitUnreadable + ": " + err.Error()}}
}

// encodeReport is st as the init writes it: bounded within lim (see
// bound), one JSON line.
func encodeReport(st protocol.InitStatus, lim protocol.CollectLimits) []byte {
	bound(&st, lim)
	b, err := json.Marshal(st)
	if err != nil || int64(len(b)) >= protocol.ReportMaxBytes(lim) {
		// Not reached: bound keeps every part within protocol.ReportMaxBytes.
		n := len(st.Files) + len(st.Omitted)
		st.Files, st.Omitted = nil, []executor.OmittedFile{{Path: protocol.NotNamedPath(n), Reason: executor.OmitNotNamed, Count: n}}
		b, _ = json.Marshal(st)
	}
	return append(b, '\n')
}

package console

import (
	"os"
	"strings"

	"github.com/runblock/runblock/bots/internal/answer"
	ipynb "github.com/runblock/runblock/formatting/notebook"
)

// exportCommand, as a whole message with a path after it, writes the
// session's cells so far, with their outputs, to that path as a Jupyter
// notebook (nbformat 4), as a chat thread's export posts it.
const exportCommand = "%export"

// exportPath returns the path of an "%export PATH" message.
func exportPath(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(msg), exportCommand)
	if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// export answers "%export PATH".
func (b *Bot) export(path string) string {
	switch {
	case path == "":
		return "Say where to write the notebook: " + exportCommand + " session.ipynb"
	case len(b.history.nb) == 0:
		return answer.NothingToExport
	}
	data, err := ipynb.Write(b.history.nb)
	if err != nil {
		b.log.Error("writing the session's notebook", "err", err)
		return "The notebook could not be written."
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "The notebook could not be written: " + err.Error()
	}
	return answer.ExportText(len(b.history.nb)) + " Written to " + path + "."
}

package slack

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/formatting"
)

// The block_id of the actions block of a reply's buttons: buttonsBlockID
// on a message the bot posted, urlButtonsBlockID on one posted through a
// response_url, which only a click's response_url can delete.
const (
	buttonsBlockID    = "runblock"
	urlButtonsBlockID = "runblock.url"
)

// attachmentsOption is a reply's attachments, below its text, which
// stays the message's text (a section block would cut it at 3,000
// characters): its native table (Slack takes one a message), then its
// buttons (answer.Button) as an actions block; none is an empty list,
// which removes the earlier ones from an updated reply.
func attachmentsOption(tables []formatting.Table, buttons []answer.Button) slack.MsgOption {
	atts := []slack.Attachment{}
	if len(tables) > 0 {
		atts = append(atts, slack.Attachment{Fallback: "A table", Blocks: slack.Blocks{BlockSet: []slack.Block{tableBlock(tables[0])}}})
	}
	if len(buttons) > 0 {
		atts = append(atts, buttonsAttachment(buttonsBlockID, buttons))
	}
	return slack.MsgOptionAttachments(atts...)
}

// tableBlock is t as a table block, within its limits: text cells, the
// numeric columns aligned right.
func tableBlock(t formatting.Table) *slack.TableBlock {
	t = t.Slack()
	tb := &slack.TableBlock{Type: slack.MBTTable}
	settings := make([]slack.ColumnSetting, len(t.Columns))
	for i, numeric := range t.Numeric {
		settings[i].Align = slack.ColumnAlignmentLeft
		if numeric {
			settings[i].Align = slack.ColumnAlignmentRight
		}
	}
	tb.WithColumnSettings(settings...)
	for _, row := range append([][]string{t.Columns}, t.Rows...) {
		cells := make([]slack.TableCell, len(row))
		for i, c := range row {
			if c == "" {
				c = " " // a cell's text may not be empty: the index's header
			}
			cells[i] = slack.NewTableRawTextCell(c)
		}
		tb.AddRow(cells...)
	}
	return tb
}

// buttonsAttachment is the attachment of a reply's buttons, in the actions
// block blockID.
func buttonsAttachment(blockID string, buttons []answer.Button) slack.Attachment {
	elems := make([]slack.BlockElement, len(buttons))
	for i, b := range buttons {
		btn := slack.NewButtonBlockElement(b.ID, string(b.Action), slack.NewTextBlockObject(slack.PlainTextType, b.Label, false, false))
		if b.Action == answer.ActionDelete {
			btn.Style = slack.StyleDanger
		}
		elems[i] = btn
	}
	return slack.Attachment{Fallback: "Buttons: run again, delete", Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewActionBlock(blockID, elems...)}}}
}

// onButtons carries out the clicks on a reply's buttons (block_actions);
// the Socket Mode envelope is acked already, and the clicker's answers go
// through the response_url, where only they see them.
func (b *Bot) onButtons(ws *workspace, team string, cb slack.InteractionCallback) {
	for _, a := range cb.ActionCallback.BlockActions {
		if _, _, ok := answer.ParseButton(a.ActionID); !ok {
			continue
		}
		b.received()
		thread := cb.Container.ThreadTs
		if thread == "" {
			thread = threadOf(cb.Message.ThreadTimestamp, cb.Message.Timestamp)
		}
		src := source{ws: ws, what: "button", team: team, user: cb.User.ID, channel: cb.Channel.ID, thread: thread, triggered: true, responseURL: cb.ResponseURL}
		user, id := cb.User.ID, a.ActionID
		var remove func(context.Context) error
		if a.BlockID == urlButtonsBlockID {
			// A reply posted through a response_url: the bot cannot
			// delete it, the click's response_url can.
			remove = func(ctx context.Context) error { return deleteResponseURL(ctx, src.responseURL) }
		}
		b.spawn("button", func(ctx context.Context) {
			b.flow.Click(ctx, answer.Click[source]{
				ID: id, Src: src, User: src.userKey(),
				Admin: func(ctx context.Context) bool { return b.admin(ctx, ws, user) },
				Tell: func(ctx context.Context, text string) error {
					return postResponseURL(ctx, src.responseURL, slack.ResponseTypeEphemeral, text)
				},
				Remove: remove,
				Log:    b.log.With("channel", src.channel, "user", user),
			})
		})
	}
}

// admin reports whether user is an admin or owner of the workspace ws
// (users.info); when that is not known, no.
func (b *Bot) admin(ctx context.Context, ws *workspace, user string) bool {
	u, err := ws.api.GetUserInfoContext(ctx, user)
	if err != nil {
		b.log.Warn("users.info: whether a user is an admin is not known; only the author may delete", "user", user, "err", err)
		return false
	}
	return u.IsAdmin || u.IsOwner || u.IsPrimaryOwner
}

package slack

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/answer"
)

// buttonsBlockID names the actions block of a reply's buttons.
const buttonsBlockID = "runblock"

// buttonsOption shows a reply's buttons (answer.Button) as a Block Kit
// actions block in an attachment below its text, which stays the message's
// text as before: a section block would cut it at 3,000 characters. An
// update without buttons sends none, which removes the earlier ones.
func buttonsOption(buttons []answer.Button) slack.MsgOption {
	if len(buttons) == 0 {
		return slack.MsgOptionAttachments([]slack.Attachment{}...)
	}
	return slack.MsgOptionAttachments(buttonsAttachment(buttons))
}

func buttonsAttachment(buttons []answer.Button) slack.Attachment {
	elems := make([]slack.BlockElement, len(buttons))
	for i, b := range buttons {
		btn := slack.NewButtonBlockElement(b.ID, string(b.Action), slack.NewTextBlockObject(slack.PlainTextType, b.Label, false, false))
		if b.Action == answer.ActionDelete {
			btn.Style = slack.StyleDanger
		}
		elems[i] = btn
	}
	return slack.Attachment{Fallback: "Buttons: run again, delete", Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewActionBlock(buttonsBlockID, elems...)}}}
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
		b.spawn("button", func(ctx context.Context) {
			b.flow.Click(ctx, answer.Click[source]{
				ID: id, Src: src, User: src.userKey(),
				Admin: func(ctx context.Context) bool { return b.admin(ctx, ws, user) },
				Tell: func(ctx context.Context, text string) error {
					return postResponseURL(ctx, src.responseURL, slack.ResponseTypeEphemeral, text)
				},
				Log: b.log.With("channel", src.channel, "user", user),
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

package agent

import (
	"cmp"
	"context"
)

// Acting as admin (issue 51): an admin reads every conversation, and the
// UI shows another user's read-only. When she writes in one anyway
// (the UI's "Act as admin", the send op's act_as_admin), the message is
// marked as hers (Message.SentBy, SentByName) and its turn's model calls
// are billed to her budget, not the owner's; the owner must still stand.

// Sender is who a message into another user's conversation is marked as
// sent by; the zero Sender: its owner (or a project member) sent it.
type Sender struct {
	ID   string
	Name string // email or name, for the mark
}

// sentBy is the Sender of a send into c by ctx's principal: an admin in a
// conversation she does not own, else nobody.
func (r *Runner) sentBy(ctx context.Context, c Conversation) Sender {
	if !ActsAsAdmin(ctx, c) {
		return Sender{}
	}
	p := PrincipalFrom(ctx)
	s := Sender{ID: p.UserID, Name: p.UserID}
	if r.cfg.Users != nil {
		if u, err := r.cfg.Users.User(ctx, p.UserID); err == nil {
			s.Name = cmp.Or(u.Email, u.Name, u.ID)
		}
	}
	return s
}

// ActsAsAdmin reports whether ctx's principal writing in conversation c
// would act as admin: an admin in another user's conversation.
func ActsAsAdmin(ctx context.Context, c Conversation) bool {
	p := PrincipalFrom(ctx)
	return p.Admin() && p.UserID != "" && p.UserID != OwnerOf(c)
}

// auditAdminWrite records an admin's message into another user's
// conversation c, as admin_read records her reads.
func (r *Runner) auditAdminWrite(ctx context.Context, c Conversation, messageID string) {
	if r.cfg.Audit != nil {
		r.cfg.Audit.Record(ctx, AuditAdminWrite, c.ID, map[string]string{"owner": OwnerOf(c), "message_id": messageID})
	}
}

// payer is whose budget the turn's model calls use: the admin who sent
// its message acting as admin, else the conversation's owner.
func (t *turn) payer() string { return cmp.Or(t.sentBy, OwnerOf(t.conv)) }

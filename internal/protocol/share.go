package protocol

import "github.com/agentik/agentik/internal/agent"

// WebSocket ops of share links (docs/PROTOCOL.md, Share links); each is
// its REST route under /agentik, declared once in the server's op table
// (server/op.go). Opening a link is the page /s/{token}, not an op.
const (
	OpCreateShare = "create_share" // POST /conversations/{conversation_id}/shares {expires_at?}
	OpListShares  = "list_shares"  // GET /shares
	OpRevokeShare = "revoke_share" // DELETE /shares/{share_id}
)

// SharesResult is the result of list_shares.
type SharesResult struct {
	Shares []agent.Share `json:"shares"`
}

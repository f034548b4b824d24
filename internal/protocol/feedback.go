package protocol

// WebSocket ops of feedback (docs/PROTOCOL.md, Feedback); each mirrors
// its REST route: rate_message is PUT
// /agentik/conversations/{conversation_id}/messages/{message_id}/feedback,
// list_feedback GET /agentik/conversations/{conversation_id}/feedback,
// feedback_report GET /agentik/feedback (admins).
const (
	OpRateMessage    = "rate_message"
	OpListFeedback   = "list_feedback"
	OpFeedbackReport = "feedback_report"
)

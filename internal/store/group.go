package store

import (
	"github.com/agentik/agentik/internal/agent"
)

// The group commit (the writer goroutine, its queue, the gathering of a
// batch and its split into light and heavy requests) is eventlog.Writer;
// here is what the store tells it of the cost of a request (isLight).

// isLight reports whether every record of recs is an event alone: a
// conversation event that is not a message, with nothing else to apply
// (a streamed token, a tool call's progress). Such a record is one
// agent_event row. The split is about cost only: a request taken for heavy
// is applied exactly as a light one would be.
func isLight(recs []*agent.Record) bool {
	for _, rec := range recs {
		if rec.Event.Kind != agent.KindConversation || rec.Event.Event == nil || rec.Event.Event.Message != nil ||
			rec.Conversation != nil || rec.Memory != nil || rec.ReplaceMemory || rec.StaleMemory || rec.Context != nil ||
			rec.Turn != agent.TurnNone || rec.Source != "" || rec.AutoTitle || rec.Enqueue != nil || rec.Dequeue != "" ||
			rec.Wait != nil || rec.Decide != nil || rec.Resolve != "" || rec.EndWait || rec.Elicit != nil || rec.Head != nil {
			return false
		}
	}
	return true
}

package agent

// A model's tool calls must each be answered before the conversation goes
// on: OpenAI (and any strict endpoint) refuses a history where an
// assistant entry with tool_calls is not followed by a tool entry for each
// of its ids. A round that ends normally answers every call (a failed or
// interrupted call gets an error result); every abnormal end answers the
// calls left open with an is_error result saying why, in history and in
// working memory:
//
//   - a turn that fails or is interrupted mid-round (run's end, turn.go);
//   - a turn whose process died (Recover, recovery.go);
//   - anything else that left calls open (a client-side call the client
//     never answered, a failed end write that Recover could not repair):
//     a turn answers them when it loads working memory (openCallsAnswered).

// Why a call was left without its result.
const (
	whyRestart = "interrupted by a restart: the server restarted while this tool call ran, so it may or may not have run; it was not run again"
	whyFailed  = "the turn stopped before this tool call's result was saved: "
	whyNoReply = "no result came for this tool call: the client that was to run it sent none, or the turn that made it stopped"
)

// answerOpen returns mem with an is_error result, saying why, after each
// tool call no result answers (the results of a call are the tool entries
// right after its assistant entry), and those results as history
// messages. tail reports whether every result went at the end of mem (it
// can then be appended to stored memory).
func answerOpen(mem []ModelMessage, why string) (fixed []ModelMessage, results []Message, tail bool) {
	return answerOpenBy(mem, because(why))
}

// because answers every open call with why.
func because(why string) func(ToolCall) Message {
	return func(ToolCall) Message { return Message{Result: why} }
}

// answerOpenBy is answerOpen with each call's answer from answer (its
// Result and ChildID; it is always an error result).
func answerOpenBy(mem []ModelMessage, answer func(ToolCall) Message) (fixed []ModelMessage, results []Message, tail bool) {
	tail = true
	for i := 0; i < len(mem); i++ {
		m := mem[i]
		fixed = append(fixed, m)
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		seen := map[string]bool{}
		j := i + 1
		for ; j < len(mem) && mem[j].Role == RoleTool; j++ {
			seen[mem[j].ToolCallID] = true
			fixed = append(fixed, mem[j])
		}
		for _, c := range m.ToolCalls {
			if seen[c.ID] {
				continue
			}
			a := answer(c)
			res := Message{Type: MessageToolResult, CallID: c.ID, Name: c.Name, Result: a.Result, ChildID: a.ChildID, IsError: true}
			results = append(results, res)
			fixed = append(fixed, res.memory())
			tail = tail && j == len(mem)
		}
		i = j - 1
	}
	return fixed, results, tail
}

// hasOpen reports whether a tool call of mem has no result.
func hasOpen(mem []ModelMessage) bool {
	for i, m := range mem {
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		j := i + 1
		for ; j < len(mem) && mem[j].Role == RoleTool; j++ {
		}
		if j-i-1 < len(m.ToolCalls) {
			return true
		}
		for _, c := range m.ToolCalls {
			found := false
			for _, res := range mem[i+1 : j] {
				found = found || res.ToolCallID == c.ID
			}
			if !found {
				return true
			}
		}
	}
	return false
}

// answerRecords are the records that answer mem's open calls (none when
// every call is answered): one tool_result message each, with its memory
// entry, or, when an entry follows an open call, the whole repaired
// memory on the last.
func (r *Runner) answerRecords(convID string, mem []ModelMessage, why string) []*Record {
	return r.answerRecordsBy(convID, mem, because(why))
}

// answerRecordsBy is answerRecords with each call's answer from answer.
func (r *Runner) answerRecordsBy(convID string, mem []ModelMessage, answer func(ToolCall) Message) []*Record {
	if !hasOpen(mem) {
		return nil // the usual case, without a copy of memory
	}
	fixed, results, tail := answerOpenBy(mem, answer)
	if len(results) == 0 {
		return nil
	}
	recs := make([]*Record, len(results))
	for i, m := range results {
		m.ConversationID = convID
		recs[i] = r.messageRecord(m)
		if tail {
			recs[i].Memory = []ModelMessage{m.memory()}
		}
	}
	if !tail {
		last := recs[len(recs)-1]
		last.Memory, last.ReplaceMemory = fixed, true
	}
	return recs
}

// openCallsAnswered answers, before the turn's first model call, the calls
// its loaded memory leaves open, and returns the repaired memory. A turn
// resumed after approvals runs its waiting calls first, so it is not
// repaired here.
func (t *turn) openCallsAnswered(mem []ModelMessage) ([]ModelMessage, error) {
	recs := t.r.answerRecords(t.conv.ID, mem, whyNoReply)
	if len(recs) == 0 {
		return mem, nil
	}
	if err := t.emitRecs(recs...); err != nil {
		return mem, err
	}
	fixed, _, _ := answerOpen(mem, whyNoReply)
	return fixed, nil
}

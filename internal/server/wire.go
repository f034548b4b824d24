package server

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/protocol"
)

// replyFrame encodes a reply. A nil id encodes as null.
func replyFrame(id *string, result any, e *agent.Error) ([]byte, error) {
	f := struct {
		Type   string       `json:"type"`
		ID     *string      `json:"id"`
		OK     bool         `json:"ok"`
		Result any          `json:"result,omitempty"`
		Error  *agent.Error `json:"error,omitempty"`
	}{protocol.FrameReply, id, e == nil, result, e}
	if e == nil && result == nil {
		f.Result = protocol.Empty{}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode reply: %w", err)
	}
	return b, nil
}

// appendEventFrame appends an event frame around an already encoded
// AllEvent. Sub ids are made by the server and never need escaping.
func appendEventFrame(b []byte, sub string, ev []byte) []byte {
	b = append(b, `{"type":"event","sub":"`...)
	b = append(b, sub...)
	b = append(b, `","event":`...)
	b = append(b, ev...)
	return append(b, '}')
}

func appendCaughtUpFrame(b []byte, sub string, seq int64) []byte {
	b = append(b, `{"type":"caught_up","sub":"`...)
	b = append(b, sub...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	return append(b, '}')
}

func resyncFrame(sub string, after int64, reason string, start int64) []byte {
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Sub    string `json:"sub"`
		After  int64  `json:"after"`
		Reason string `json:"reason"`
		Start  *int64 `json:"start,omitempty"`
	}{protocol.FrameResync, sub, after, reason, startField(reason, start)})
	return b
}

// startField is the resync's start: only a pruned resync has one.
func startField(reason string, start int64) *int64 {
	if reason != broker.ReasonPruned {
		return nil
	}
	return &start
}

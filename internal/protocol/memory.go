package protocol

import "github.com/agentik/agentik/internal/agent"

// WebSocket ops of long-term memory (docs/PROTOCOL.md, Memory); each
// mirrors its REST route under /agentik/memory. agent (the Command's
// settings field) names the agent, "" the default one.
const (
	OpGetMemory         = "get_memory"          // GET /memory?agent=
	OpPutMemory         = "put_memory"          // PUT /memory/{label}?agent= {value, limit?}
	OpClearMemory       = "clear_memory"        // DELETE /memory/{label}?agent=
	OpRevertMemory      = "revert_memory"       // POST /memory/changes/{change_id}/revert
	OpListMemoryChanges = "list_memory_changes" // GET /memory/changes?agent=&limit=
)

// MemoryFields are the fields of the memory ops.
type MemoryFields struct {
	Label    string  `json:"label,omitempty"`
	Value    *string `json:"value,omitempty"`     // put_memory
	ChangeID string  `json:"change_id,omitempty"` // revert_memory
}

// MemoryResult is the result of get_memory and GET /agentik/memory.
type MemoryResult struct {
	Blocks []agent.MemoryBlock `json:"blocks"`
}

// MemoryWriteResult is the result of put_memory, clear_memory and
// revert_memory: the block as it is now, and the change that made it so.
type MemoryWriteResult struct {
	agent.MemoryBlock
	Change agent.MemoryChange `json:"change"`
}

// MemoryChangesResult is the result of list_memory_changes, newest first.
type MemoryChangesResult struct {
	Changes []agent.MemoryChange `json:"changes"`
}

// WrittenMemory is the result of a memory write: the block ch left.
func WrittenMemory(ch agent.MemoryChange) MemoryWriteResult {
	return MemoryWriteResult{MemoryBlock: agent.MemoryBlock{Label: ch.Label, Value: ch.Value, Limit: ch.Limit}, Change: ch}
}

// checkMemoryOp checks the fields of a memory op; ok is false for other ops.
func (c *Command) checkMemoryOp() (ok bool, err error) {
	switch c.Op {
	case OpGetMemory, OpListMemoryChanges:
		return true, nil
	case OpPutMemory, OpClearMemory:
		if c.Label == "" {
			return true, agent.Errorf(agent.CodeBadRequest, "%s needs label, e.g. \"human\"", c.Op)
		}
		if c.Op == OpPutMemory && c.Value == nil {
			return true, agent.Errorf(agent.CodeBadRequest, "put_memory needs value: the block's whole new text")
		}
		return true, nil
	case OpRevertMemory:
		if c.ChangeID == "" {
			return true, agent.Errorf(agent.CodeBadRequest, "revert_memory needs change_id")
		}
		return true, nil
	}
	return false, nil
}

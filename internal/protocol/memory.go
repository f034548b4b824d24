package protocol

import "github.com/agentik/agentik/internal/agent"

// WebSocket ops of long-term memory (docs/PROTOCOL.md, Memory); each is
// its REST route under /agentik/memory, declared once in the server's op
// table (server/op.go). agent names the agent, "" the default one.
const (
	OpGetMemory         = "get_memory"          // GET /memory?agent=
	OpPutMemory         = "put_memory"          // PUT /memory/{label}?agent= {value, limit?}
	OpClearMemory       = "clear_memory"        // DELETE /memory/{label}?agent=
	OpRevertMemory      = "revert_memory"       // POST /memory/changes/{change_id}/revert
	OpListMemoryChanges = "list_memory_changes" // GET /memory/changes?agent=&limit=
)

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
